import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { StoredPoint } from '../../../src/index/contract.js';
import type { IngestService } from '../../../src/ingest/service.js';
import { type Harness, startIngest } from './harness.js';

/** Small word-budget chunks, no background sweep: a few sentences make several chunks. */
export const SMALL_CHUNKS_ENV = {
  CHUNK_SPLIT_BY: 'word',
  CHUNK_SIZE: '12',
  CHUNK_OVERLAP: '2',
  INGEST_SWEEP_INTERVAL: '0',
};

/** `n` numbered sentences of a `tag` handbook. */
export const handbook = (tag: string, n: number) =>
  Array.from({ length: n }, (_, i) => `Clause ${i} of the ${tag} handbook covers case ${i}.`).join(' ');

/**
 * A fresh ingest part (LanceDB in a temp dir) and a scratch directory for each test of the suite
 * that calls this; read them through the returned getters. `env` may be a function, read when each
 * test starts (a Redis URL known only once the suite's server runs).
 */
export function serviceFixture(
  env: Record<string, string> | (() => Record<string, string>) = SMALL_CHUNKS_ENV,
) {
  let h: Harness | undefined;
  let dir: string | undefined;
  beforeEach(async () => {
    h = await startIngest(typeof env === 'function' ? env() : env);
    dir = await mkdtemp(join(tmpdir(), 'kilde-service-'));
  });
  afterEach(async () => {
    await h?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return {
    get h(): Harness {
      if (!h) throw new Error('the fixture is set up in beforeEach');
      return h;
    },
    get service(): IngestService {
      return this.h.part.pipeline().service;
    },
    get dir(): string {
      if (!dir) throw new Error('the fixture is set up in beforeEach');
      return dir;
    },
  };
}

/** What a reader sees of a file: its chunks' text, offsets and languages (not the version-dependent ids). */
export const chunkShape = (points: readonly StoredPoint[]) =>
  points.map((p) => ({
    content: p.content,
    split: p.meta.split_id,
    start: p.meta.char_start,
    end: p.meta.char_end,
    languages: p.meta.languages,
  }));
