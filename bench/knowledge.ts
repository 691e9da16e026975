import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { type IndexPoint, pointId } from '../src/index/contract.js';
import { createLanceIndex } from '../src/index/lancedb.js';
import { listCollections, listDocuments, listVersions } from '../src/ingest/knowledge.js';
import { newIngestVersion } from '../src/versions/ledger.js';
import { commitVersion } from '../src/versions/publish.js';
import { restoreVersion } from '../src/versions/restore.js';
import { mulberry32, percentile } from './lib/stats.js';

/**
 * `npm run bench:knowledge`: what the knowledge API costs on the embedded LanceDB index, on
 * synthetic files: a re-ingest's commit with KEEP_VERSIONS 0 against N (the retirement moves the
 * old version instead of deleting it), a restore, a document page, the collection listing and a
 * version listing. Prints figures only; nothing here asserts a time.
 *   --files 2000 --chunks 20 --dim 384 --keep 3 --rounds 30 --page 50
 */
const { values: args } = parseArgs({
  options: {
    files: { type: 'string', default: '2000' },
    chunks: { type: 'string', default: '20' },
    dim: { type: 'string', default: '384' },
    keep: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '30' },
    page: { type: 'string', default: '50' },
  },
});
const FILES = Number(args.files);
const CHUNKS = Number(args.chunks);
const DIM = Number(args.dim);
const KEEP = Number(args.keep);
const ROUNDS = Number(args.rounds);
const PAGE = Number(args.page);
const COLLECTION = 'bench';

const rand = mulberry32(7);
const log = pino({ level: 'silent' });

function version(fileId: string, v: string): IndexPoint[] {
  return Array.from({ length: CHUNKS }, (_, s) => ({
    id: pointId(fileId, v, s),
    content: `chunk ${s} of ${fileId} version ${v} ${Math.floor(rand() * 1e6)}`,
    meta: {
      collection_name: COLLECTION,
      collection_type: 'file',
      file_id: fileId,
      ingest_version: v,
      split_id: s,
      name: `${fileId}.md`,
      source: `${fileId}.md`,
      languages: ['en'],
      extraction_engine: 'inprocess',
    },
    dense: Array.from({ length: DIM }, () => rand() * 2 - 1),
  }));
}

async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t = performance.now();
  const out = await fn();
  return [performance.now() - t, out];
}

function report(what: string, ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(
    `${what.padEnd(44)} p50 ${percentile(sorted, 50).toFixed(1).padStart(7)} ms   p95 ${percentile(sorted, 95).toFixed(1).padStart(7)} ms   (n=${ms.length})`,
  );
}

const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-knowledge-'));
try {
  const index = await createLanceIndex(
    { uri: dir, collection: 'bench', denseDim: DIM, sparse: false, timeoutMs: 60_000 },
    { log },
  );
  await index.ensureCollection();
  const t0 = performance.now();
  for (let f = 0; f < FILES; f += 100) {
    const batch: IndexPoint[] = [];
    for (let i = f; i < Math.min(FILES, f + 100); i++)
      batch.push(...version(`file-${i}`, newIngestVersion()));
    await index.upsert(batch);
  }
  console.log(
    `seeded ${FILES} files x ${CHUNKS} chunks (dim ${DIM}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );

  const now = () => Date.now();
  for (const keep of [0, KEEP]) {
    const ms: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const fileId = `file-${r}`;
      const v = newIngestVersion();
      const [t] = await timed(() =>
        commitVersion(index, { fileId, collectionName: COLLECTION, version: v }, version(fileId, v), {
          log,
          now,
          keep,
        }),
      );
      ms.push(t);
    }
    report(`re-ingest commit, KEEP_VERSIONS=${keep}`, ms);
  }

  const restores: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const fileId = `file-${r}`;
    const versions = await listVersions(index, fileId, COLLECTION);
    const kept = versions.find((v) => !v.live);
    if (!kept) continue;
    const [t] = await timed(() =>
      restoreVersion(
        index,
        { fileId, collectionName: COLLECTION, version: kept.version },
        { log, now, keep: KEEP },
      ),
    );
    restores.push(t);
  }
  report(`restore (${CHUNKS} chunks)`, restores);

  const versionMs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const [t] = await timed(() => listVersions(index, `file-${r}`, COLLECTION));
    versionMs.push(t);
  }
  report('GET …/versions (live + kept)', versionMs);

  const pages: number[] = [];
  let cursor: string | undefined;
  let seen = 0;
  do {
    const [t, page] = await timed(() => listDocuments(index, COLLECTION, PAGE, cursor));
    pages.push(t);
    seen += page.documents.length;
    cursor = page.next;
  } while (cursor !== undefined);
  report(`documents page of ${PAGE} (${seen} files, ${pages.length} pages)`, pages);

  const cols: number[] = [];
  for (let r = 0; r < 5; r++) {
    const [t] = await timed(() => listCollections(index));
    cols.push(t);
  }
  report(`collections listing (${FILES * CHUNKS} chunks)`, cols);
  await index.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
