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

  it('builds every concrete engine under its own name, none accepting a profile', () => {
    for (const engine of CONCRETE_ENGINES) {
      const extractor = createExtractor(engine, settings(urls), { log: silent });
      expect(extractor).toMatchObject({ name: engine, acceptsProfile: false });
    }
  });

  it('accepts the later engines and auto as names but says they are not in this build', () => {
    for (const engine of ['vision-llm', 'hybrid-diagram', 'auto']) {
      expect(settings({ EXTRACTION_ENGINE: engine }).EXTRACTION_ENGINE).toBe(engine);
      expect(() => createExtractor(engine, settings(), { log: silent })).toThrow(
        new ConfigError(
          `Configuration error: EXTRACTION_ENGINE "${engine}" is not available in this build; choose one of inprocess, pdf-inprocess, sidecar-http, doc-layout, doc-generic`,
        ),
      );
    }
    expect(() => settings({ EXTRACTION_ENGINE: 'tika' })).toThrow(/EXTRACTION_ENGINE/);
    expect(() => createExtractor('tika', settings(), { log: silent })).toThrow(
      /unknown extraction engine "tika"/,
    );
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
