/**
 * npm run bench:qdrant-requests [-- <files> <chunks>]: the Qdrant requests one pipeline pass of
 * small files costs its version protocol (src/versions/): every file's `commitVersion` started
 * together, as the pass starts them, through the OpenAPI-validating fake (test/fakes/qdrant-server.ts;
 * with QDRANT_URL, a validating proxy in front of a real server). A first pass (new files) and a
 * second (new versions, the first retired); requests per file and per operation.
 */
import pino from 'pino';
import { type IndexPoint, pointId } from '../src/index/contract.js';
import { openIndex } from '../src/index/open.js';
import { commitVersion } from '../src/versions/publish.js';
import { startQdrantFake } from '../test/fakes/qdrant-server.js';

const files = Number(process.argv[2] ?? 20);
const chunks = Number(process.argv[3] ?? 3);
const fake = await startQdrantFake();
const log = pino({ level: 'silent' });
const index = await openIndex(
  { uri: fake.url, collection: `requests_${Date.now()}`, denseDim: 4, sparse: false, timeoutMs: 30_000 },
  { log },
);
await index.ensureCollection();

async function pass(version: string) {
  const before = fake.requests.length;
  await Promise.all(
    Array.from({ length: files }, (_, k) => {
      const fileId = `file-${k}`;
      const collectionName = k % 2 === 0 ? 'even' : 'odd';
      const points: IndexPoint[] = Array.from({ length: chunks }, (_, s) => ({
        id: pointId(fileId, version, s),
        content: `chunk ${s} of ${fileId}, version ${version}`,
        meta: {
          collection_name: collectionName,
          collection_type: 'bench',
          file_id: fileId,
          ingest_version: version,
          split_id: s,
        },
        dense: [1, 0, 0, 0],
      }));
      return commitVersion(index, { fileId, collectionName, version }, points, { log, now: Date.now });
    }),
  );
  const sent = fake.requests.slice(before);
  const byOperation: Record<string, number> = {};
  for (const r of sent)
    byOperation[r.operationId ?? r.path] = (byOperation[r.operationId ?? r.path] ?? 0) + 1;
  return { requests: sent.length, perFile: Number((sent.length / files).toFixed(2)), byOperation };
}

const first = await pass('v1');
const second = await pass('v2');
const live = await index.count({ collectionNames: ['even', 'odd'] });
console.log(`${files} files of ${chunks} chunks, one pass each (${fake.mode} Qdrant)`);
console.log(`first versions:  ${first.requests} requests, ${first.perFile} a file`, first.byOperation);
console.log(`second versions: ${second.requests} requests, ${second.perFile} a file`, second.byOperation);
console.log(
  `live chunks after: ${live} (expected ${files * chunks}); schema violations: ${fake.violations.length}`,
);
await index.close();
await fake.close();
if (live !== files * chunks || fake.violations.length > 0) process.exitCode = 1;
