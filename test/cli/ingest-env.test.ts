import { describe, expect, it } from 'vitest';
import { ingestEnv, ONE_WORKER_BYTES } from '../../src/cli/passes.js';

/* `kilde ingest` of a small job runs on one extraction worker unless EXTRACTION_WORKERS is set. */

describe('the local ingest environment', () => {
  const files = (...sizes: number[]) => sizes.map((bytes) => ({ bytes }));

  it('one worker for files totalling at most ONE_WORKER_BYTES', () => {
    expect(ingestEnv({ KILDE_DATA_DIR: '/d' }, files(1000, 2000)).EXTRACTION_WORKERS).toBe('1');
    expect(ingestEnv({}, files(ONE_WORKER_BYTES)).EXTRACTION_WORKERS).toBe('1');
  });

  it('the configured pool for a larger job, and the operator’s EXTRACTION_WORKERS always', () => {
    expect(ingestEnv({}, files(ONE_WORKER_BYTES, 1)).EXTRACTION_WORKERS).toBeUndefined();
    expect(ingestEnv({ EXTRACTION_WORKERS: '3' }, files(10)).EXTRACTION_WORKERS).toBe('3');
    expect(ingestEnv({ EXTRACTION_WORKERS: ' ' }, files(10)).EXTRACTION_WORKERS).toBe('1');
  });

  it('leaves the environment it was given as it was', () => {
    const env = { KILDE_DATA_DIR: '/d' };
    ingestEnv(env, files(10));
    expect(env).toEqual({ KILDE_DATA_DIR: '/d' });
  });
});
