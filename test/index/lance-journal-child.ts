import pino from 'pino';
import { createLanceIndex } from '../../src/index/lancedb.js';
import { writeVersion } from '../../src/versions/write.js';
import { fileVersion } from './journal-points.js';

// A process that journals new files and is then killed (lancedb-journal.test.ts): it writes the
// versions of `count` files in one window that never closes, says so, and waits to be killed.
const [dir, count] = [process.argv[2], Number(process.argv[3])];
if (!dir) throw new Error('usage: lance-journal-child.ts <dir> <count>');
const index = await createLanceIndex(
  { uri: dir, collection: 'ingestion_files', sparse: true, timeoutMs: 10_000 },
  { log: pino({ level: 'silent' }) },
  { commitWindowMs: 3_600_000 },
);
await index.ensureCollection();
await Promise.all(
  Array.from({ length: count }, (_, i) => writeVersion(index, fileVersion(`killed-${i}`, 'v1', 3))),
);
process.stdout.write('journaled\n');
setInterval(() => undefined, 60_000);
