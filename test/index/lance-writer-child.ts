import pino from 'pino';
import { pointId } from '../../src/index/contract.js';
import { createLanceIndex } from '../../src/index/lancedb.js';

// A second process on the same directory (lancedb.test.ts spawns it): counts, then writes one point.
const dir = process.argv[2];
if (!dir) throw new Error('usage: lance-writer-child.ts <dir>');
const index = await createLanceIndex(
  { uri: dir, collection: 'ingestion_files', sparse: true, timeoutMs: 10_000 },
  { log: pino({ level: 'silent' }) },
);
await index.ensureCollection();
const before = await index.count({});
await index.upsert([
  {
    id: pointId('child', 'v1', 0),
    content: 'written by the child',
    meta: {
      collection_name: 'c',
      collection_type: 'knowledge',
      file_id: 'child',
      ingest_version: 'v1',
      split_id: 0,
    },
  },
]);
await index.close();
process.stdout.write(`${before}\n`);
