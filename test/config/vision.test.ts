import { describe, expect, it } from 'vitest';
import { extractionSchema } from '../../src/config/extraction.js';
import { ingestSchema } from '../../src/config/ingest.js';
import { ConfigError, parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { cleanEnv, runCli, tempDir } from '../cli/helpers.js';

const ingest = (env: Record<string, string>) =>
  parseConfig(ingestSchema, { API_KEY: 'k', EMBEDDING_PROVIDER: 'none', ...env });

describe('vision engines need their endpoint (a rule of the schema)', () => {
  it.each([
    ['vision-llm', {}, 'VISION_LLM_API_BASE_URL is required by EXTRACTION_ENGINE=vision-llm'],
    ['hybrid-diagram', {}, 'VISION_LLM_API_BASE_URL is required by EXTRACTION_ENGINE=hybrid-diagram'],
    // auto routes diagrams to hybrid-diagram unless told otherwise.
    [
      'auto',
      {},
      'VISION_LLM_API_BASE_URL is required by EXTRACTION_ENGINE=auto, which routes to hybrid-diagram',
    ],
    [
      'auto',
      { EXTRACTION_ROUTER_DEFAULT: 'vision-llm', EXTRACTION_ROUTER_DIAGRAM_ENGINE: 'inprocess' },
      'VISION_LLM_API_BASE_URL is required by EXTRACTION_ENGINE=auto, which routes to vision-llm',
    ],
  ])(
    'EXTRACTION_ENGINE=%s %o without VISION_LLM_API_BASE_URL is a configuration error naming it',
    (engine, env, message) => {
      for (const parse of [
        (e: Record<string, string>) => ingest(e),
        (e: Record<string, string>) => parseConfig(allSchema, { API_KEY: 'k', ...e }),
        (e: Record<string, string>) => parseConfig(extractionSchema, e),
      ]) {
        const run = () => parse({ EXTRACTION_ENGINE: engine, VISION_LLM_MODEL: 'vl', ...env });
        expect(run).toThrow(ConfigError);
        expect(run).toThrow(message);
      }
    },
  );

  it('a model is required too; a blank URL counts as none', () => {
    expect(() => ingest({ EXTRACTION_ENGINE: 'vision-llm', VISION_LLM_API_BASE_URL: '  ' })).toThrow(
      'Configuration error: VISION_LLM_API_BASE_URL is required by EXTRACTION_ENGINE=vision-llm; VISION_LLM_MODEL is required by EXTRACTION_ENGINE=vision-llm',
    );
  });

  it('engines that need no vision start without it; the vision defaults are the contract’s', () => {
    const c = ingest({ EXTRACTION_ENGINE: 'auto', EXTRACTION_ROUTER_DIAGRAM_ENGINE: 'pdf-inprocess' });
    expect(c).toMatchObject({
      EXTRACTION_ROUTER_DEFAULT: 'inprocess',
      EXTRACTION_ROUTER_MIN_TEXTBOXES: 20,
      EXTRACTION_ROUTER_DRAWING_RATIO: 2,
      EXTRACTION_ROUTER_MIN_BODY_IMAGES: 1,
      EXTRACTION_ROUTER_MIN_IMAGE_EMU: 1_500_000_000_000,
      EXTRACTION_ROUTER_MIN_IMAGE_WORD_RATIO: 0,
      VISION_LLM_DPI: 150,
      VISION_LLM_MAX_PAGES: 20,
      VISION_LLM_MAX_TOKENS: 16384,
    });
    expect(() => ingest({ EXTRACTION_ENGINE: 'auto', EXTRACTION_ROUTER_DIAGRAM_ENGINE: 'auto' })).toThrow(
      /EXTRACTION_ROUTER_DIAGRAM_ENGINE/,
    );
  });

  it('kilde serve ingest exits 2 with one line naming the variable', async () => {
    const tmp = await tempDir('kilde-vision-config-');
    try {
      const run = await runCli(
        ['serve', 'ingest'],
        cleanEnv({
          API_KEY: 'k',
          EMBEDDING_PROVIDER: 'none',
          EXTRACTION_ENGINE: 'auto',
          VISION_LLM_MODEL: 'vl',
          KILDE_DATA_DIR: `${tmp.dir}/.kilde`,
        }),
        tmp.dir,
      );
      expect(run.code).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain(
        'VISION_LLM_API_BASE_URL is required by EXTRACTION_ENGINE=auto, which routes to hybrid-diagram',
      );
    } finally {
      await tmp.remove();
    }
  });
});
