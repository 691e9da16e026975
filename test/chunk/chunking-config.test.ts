import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chunkingPiece, chunkingSettings } from '../../src/config/chunking.js';
import { ConfigError, parseConfig } from '../../src/config/parse.js';

const schema = z.object(chunkingPiece);

describe('chunking configuration', () => {
  it('defaults to token mode, 400 tokens, 80 overlap', () => {
    const c = parseConfig(schema, {});
    expect(c).toEqual({ CHUNK_SPLIT_BY: 'token', CHUNK_SIZE: 400, CHUNK_OVERLAP: 80 });
    expect(chunkingSettings(c)).toEqual({ mode: 'token', size: 400, overlap: 80 });
  });

  it('reads every mode and numbers', () => {
    for (const mode of ['token', 'markdown', 'word', 'sentence', 'passage'] as const) {
      const c = parseConfig(schema, { CHUNK_SPLIT_BY: mode, CHUNK_SIZE: '12', CHUNK_OVERLAP: '0' });
      expect(chunkingSettings(c)).toEqual({ mode, size: 12, overlap: 0 });
    }
  });

  it('rejects an unknown mode and bad numbers, naming the variable', () => {
    expect(() => parseConfig(schema, { CHUNK_SPLIT_BY: 'paragraph' })).toThrow(/CHUNK_SPLIT_BY/);
    expect(() => parseConfig(schema, { CHUNK_SIZE: '0' })).toThrow(/CHUNK_SIZE must be >= 1/);
    expect(() => parseConfig(schema, { CHUNK_OVERLAP: '-1' })).toThrow(/CHUNK_OVERLAP must be >= 0/);
  });

  it('requires the overlap to be below the size', () => {
    const c = parseConfig(schema, { CHUNK_SIZE: '100', CHUNK_OVERLAP: '100' });
    expect(() => chunkingSettings(c)).toThrow(ConfigError);
    expect(() => chunkingSettings(c)).toThrow(/CHUNK_OVERLAP must be below CHUNK_SIZE \(got 100 >= 100\)/);
  });
});
