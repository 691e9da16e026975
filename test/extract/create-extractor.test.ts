import { describe, expect, it } from 'vitest';
import { CONCRETE_ENGINES } from '../../src/config/extraction.js';
import { ConfigError } from '../../src/config/parse.js';
import { createExtractor } from '../../src/extract/create-extractor.js';
import { toIsoDate } from '../../src/extract/dates.js';
import { toIso6391 } from '../../src/extract/languages.js';
import { settings, silent } from './helpers.js';

const urls = {
  EXTRACTION_SIDECAR_URL: 'http://sidecar:8000',
  DOCLING_SERVE_URL: 'http://docling:5001',
  UNSTRUCTURED_API_URL: 'http://unstructured:8000',
};

describe('extraction engine registry', () => {
  it('defaults to the offline inprocess engine', () => {
    expect(settings().EXTRACTION_ENGINE).toBe('inprocess');
    expect(createExtractor(settings().EXTRACTION_ENGINE, settings(), { log: silent }).name).toBe('inprocess');
  });

  it('builds every concrete engine under its own name; only the vision engines accept a profile', async () => {
    const s = settings({ ...urls, VISION_LLM_API_BASE_URL: 'http://vision:8000/v1', VISION_LLM_MODEL: 'vl' });
    for (const engine of CONCRETE_ENGINES) {
      const extractor = createExtractor(engine, s, { log: silent });
      const vision = engine === 'vision-llm' || engine === 'hybrid-diagram';
      expect(extractor).toMatchObject({ name: engine, acceptsProfile: vision });
      await extractor.close?.();
    }
  });

  it('builds auto as a router over its two engines', async () => {
    const router = createExtractor(
      'auto',
      settings({ EXTRACTION_ENGINE: 'auto', EXTRACTION_ROUTER_DIAGRAM_ENGINE: 'pdf-inprocess' }),
      {
        log: silent,
      },
    );
    expect(router).toMatchObject({ name: 'auto', acceptsProfile: false });
    await router.close?.();
    // Its targets are built at start-up, so their configuration problems show there.
    expect(() =>
      createExtractor(
        'auto',
        settings({
          EXTRACTION_ENGINE: 'auto',
          EXTRACTION_ROUTER_DEFAULT: 'sidecar-http',
          EXTRACTION_ROUTER_DIAGRAM_ENGINE: 'inprocess',
        }),
        {
          log: silent,
        },
      ),
    ).toThrow('EXTRACTION_SIDECAR_URL is required by the sidecar-http engine');
  });

  it('refuses unknown engines', () => {
    expect(() => settings({ EXTRACTION_ENGINE: 'tika' })).toThrow(/EXTRACTION_ENGINE/);
    expect(() => createExtractor('tika', settings(), { log: silent })).toThrow(
      /unknown extraction engine "tika"/,
    );
  });

  it('names the vision variables a vision engine needs (the probe may ask for one the service was not set up for)', () => {
    expect(() => createExtractor('vision-llm', settings(), { log: silent })).toThrow(
      new ConfigError('Configuration error: VISION_LLM_API_BASE_URL is required by the vision-llm engine'),
    );
    expect(() =>
      createExtractor('hybrid-diagram', settings({ VISION_LLM_API_BASE_URL: 'http://vision:8000/v1' }), {
        log: silent,
      }),
    ).toThrow('VISION_LLM_MODEL is required by the hybrid-diagram engine');
  });

  it('names the missing URL of an HTTP engine', () => {
    expect(() => createExtractor('sidecar-http', settings(), { log: silent })).toThrow(
      'EXTRACTION_SIDECAR_URL is required by the sidecar-http engine',
    );
    expect(() => createExtractor('doc-layout', settings(), { log: silent })).toThrow('DOCLING_SERVE_URL');
    expect(() => createExtractor('doc-generic', settings(), { log: silent })).toThrow('UNSTRUCTURED_API_URL');
    expect(() =>
      createExtractor('sidecar-http', settings({ ...urls, EXTRACTION_SIDECAR_CONFIG: '[1]' }), {
        log: silent,
      }),
    ).toThrow('EXTRACTION_SIDECAR_CONFIG must be a JSON object');
  });
});

describe('metadata normalisation', () => {
  it('maps ISO 639-3, 639-2/B and locales to ISO 639-1', () => {
    expect(['dan', 'eng', 'deu', 'ger', 'zho', 'nob', 'en-US', 'da'].map(toIso6391)).toEqual([
      'da',
      'en',
      'de',
      'de',
      'zh',
      'nb',
      'en',
      'da',
    ]);
    expect(toIso6391('xyz')).toBeUndefined();
  });

  it('reads PDF and W3C dates as ISO 8601', () => {
    expect(toIsoDate("D:20200331180255+09'00'")).toBe('2020-03-31T09:02:55.000Z');
    expect(toIsoDate("D:20250124135915Z00'00'")).toBe('2025-01-24T13:59:15.000Z');
    expect(toIsoDate('D:2021')).toBe('2021-01-01T00:00:00.000Z');
    expect(toIsoDate('2024-09-26T08:01:00Z')).toBe('2024-09-26T08:01:00.000Z');
    expect(toIsoDate('not a date')).toBeUndefined();
  });
});
