/**
 * npm run bench:qdrant-protocol [-- --files 500 --chunks 2 --rounds 2]: what the version protocol
 * (src/versions/) costs a real Qdrant and Kilde's own client, per small file, by the shape of its
 * requests, against a plain upsert of the same chunks (what the reference pipeline sends):
 *
 * - `plain upsert`: the chunks alone, one `PUT /points` a file (no versions, no ledger);
 * - `one request`: `commitVersion` as it runs now, a version that fits one request written once with
 *   its ledger entries and retired in the same `POST /points/batch` (`PointStore.ordered`);
 * - `staged`: the same `commitVersion` over the same index with `ordered` hidden: staged, moved,
 *   counted, its `committed` entry written, retired (five requests), as before the batch endpoint;
 *
 * each as first versions of new files and as re-ingests (a second version retiring the first), one
 * upload at a time as the per-upload path sends them, and once as one pass of every file at once (the
 * CLI's bulk). Every variant on a fresh collection of one Qdrant (`QDRANT_BIN`, default the 1.18.3
 * build), rounds interleaved, the order flipped each round. Qdrant's CPU is its process's (all
 * threads); Kilde's is this process's over the variant's writes (its points built, JSON, HTTP).
 * Prints milliseconds a file by round. Asserts nothing.
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { type IndexPoint, pointId } from '../src/index/contract.js';
import { openIndex } from '../src/index/open.js';
import type { VectorIndex } from '../src/index/store.js';
import { commitVersion } from '../src/versions/publish.js';
import { startQdrantNodes } from '../test/live/qdrant-nodes.js';
import { cpuMsOf } from './lib/proc-cpu.js';

const { values } = parseArgs({
  options: {
    files: { type: 'string', default: '500' },
    chunks: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '2' },
  },
});
const FILES = Number(values.files);
const CHUNKS = Number(values.chunks);
const ROUNDS = Number(values.rounds);
const BIN = process.env.QDRANT_BIN ?? '/work/qdrant-src/v1.18.3/target/perf/qdrant';
if (!existsSync(BIN)) {
  console.log(`bench:qdrant-protocol skipped: no Qdrant binary at ${BIN} (set QDRANT_BIN)`);
  process.exit(0);
}
const log = pino({ level: 'silent' });
const nodes = await startQdrantNodes(BIN, 1);
const url = nodes.urls[0]!;
const pid = nodes.nodes[0]?.process?.pid;

// A small file's chunk as Kilde writes it: 384 dimensions, BM25 terms, Kilde's meta.
const DENSE = Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0));
const chunksOf = (file: string, version: string): IndexPoint[] =>
  Array.from({ length: CHUNKS }, (_, s) => ({
    id: pointId(file, version, s),
    content: `Rule ${s} of ${file}: the municipal handbook covers waste collection on Tuesdays and the recycling of glass, paper and metal at the depot.`,
    meta: {
      collection_name: 'bench',
      collection_type: 'file',
      file_id: file,
      ingest_version: version,
      split_id: s,
      name: `${file}.txt`,
      source: `${file}.txt`,
      content_type: 'text/plain',
      languages: ['en'],
      start_index: s * 200,
    },
    dense: DENSE,
    sparse: {
      indices: Array.from({ length: 24 }, (_, i) => 1000 + i * 7919 + s),
      values: Array(24).fill(1.2),
    },
  }));

async function fresh(staged: boolean): Promise<VectorIndex> {
  const collection = `protocol_${Math.random().toString(36).slice(2, 10)}`;
  const index = await openIndex(
    { uri: url, collection, denseDim: 384, sparse: true, timeoutMs: 120_000 },
    { log },
  );
  await index.ensureCollection();
  if (!staged) return index;
  // The same index without the ordered writes: the protocol takes its staged path.
  return new Proxy(index, {
    get: (target, prop) => (prop === 'ordered' ? undefined : (Reflect.get(target, prop, target) as unknown)),
  });
}

const commit = (index: VectorIndex, file: string, version: string) =>
  commitVersion(index, { fileId: file, collectionName: 'bench', version }, chunksOf(file, version), {
    log,
    now: Date.now,
  });
const files = Array.from({ length: FILES }, (_, k) => `file-${k}`);

/** Qdrant's and this process's CPU over `run`, in ms a file. */
async function measure(run: () => Promise<unknown>): Promise<[number, number]> {
  const q0 = cpuMsOf(pid) ?? Number.NaN;
  const c0 = process.cpuUsage();
  await run();
  const c = process.cpuUsage(c0);
  return [((cpuMsOf(pid) ?? Number.NaN) - q0) / FILES, (c.user + c.system) / 1000 / FILES];
}

const oneByOne = async (index: VectorIndex, version: string) => {
  for (const f of files) await commit(index, f, version);
};
const variants: Record<string, () => Promise<[number, number]>> = {
  'plain upsert, a file at a time': async () => {
    const index = await fresh(false);
    return measure(async () => {
      for (const f of files) await index.upsert(chunksOf(f, 'v1'));
    });
  },
  'one request, new files': async () => measure(() => fresh(false).then((ix) => oneByOne(ix, 'v1'))),
  'staged, new files': async () => measure(() => fresh(true).then((ix) => oneByOne(ix, 'v1'))),
  'one request, re-ingests': async () => {
    const index = await fresh(false);
    await oneByOne(index, 'v1');
    return measure(() => oneByOne(index, 'v2'));
  },
  'staged, re-ingests': async () => {
    const index = await fresh(true);
    await oneByOne(index, 'v1');
    return measure(() => oneByOne(index, 'v2'));
  },
  'plain upsert, one pass': async () => {
    const index = await fresh(false);
    return measure(() => index.upsert(files.flatMap((f) => chunksOf(f, 'v1'))));
  },
  'one request, one pass of new files': async () => {
    const index = await fresh(false);
    return measure(() => Promise.all(files.map((f) => commit(index, f, 'v1'))));
  },
  'staged, one pass of new files': async () => {
    const index = await fresh(true);
    return measure(() => Promise.all(files.map((f) => commit(index, f, 'v1'))));
  },
};

console.log(
  `bench:qdrant-protocol — ${FILES} files of ${CHUNKS} chunks, ${ROUNDS} rounds, Qdrant ${BIN}; load ${loadavg()[0]!.toFixed(1)} on the machine at the start`,
);
const results = new Map<string, [number, number][]>();
try {
  for (let round = 0; round < ROUNDS; round++) {
    const names = Object.keys(variants);
    for (const name of round % 2 === 1 ? names.reverse() : names) {
      const r = await variants[name]!();
      results.set(name, [...(results.get(name) ?? []), r]);
    }
  }
  const ms = (v: number) => v.toFixed(2);
  for (const [name, rs] of results) {
    console.log(
      `  ${name.padEnd(36)} Qdrant ${rs.map((r) => ms(r[0])).join(' / ')} ms a file, Kilde's client ${rs.map((r) => ms(r[1])).join(' / ')} ms`,
    );
  }
  console.log(`load at the end ${loadavg()[0]!.toFixed(1)}`);
} finally {
  await nodes.close();
}
