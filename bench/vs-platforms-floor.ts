/**
 * `npx tsx bench/vs-platforms-floor.ts [-- --rounds 3 --pages 300]`: one floor under the documents'
 * figures of `bench:vs-platforms` (docs/performance-ingestion.md, "Where the gap is"): the CPU of Kilde's
 * in-process extraction alone (PDFium, mammoth, the Markdown reader; no chunking, no index) on the
 * same 61 mixed documents and 300-page PDF, round after round in one process, so the first round
 * pays the libraries' loading (as a fresh extraction worker does) and the later ones do not.
 * Prints CPU seconds by round. Asserts nothing.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { readDocument } from '../src/extract/inprocess-engine.js';
import { writeIngestSets } from './lib/ingest-sets.js';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '3' }, pages: { type: 'string', default: '300' } },
});
const work = await mkdtemp(join(tmpdir(), 'kilde-vs-platforms-floor-'));
try {
  const sets = await writeIngestSets(work, { files: 0, pages: Number(values.pages), keys: ['mixed', 'pdf'] });
  for (const set of sets) {
    const cpu: string[] = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      const c0 = process.cpuUsage();
      for (const path of set.files) {
        // A file the reader refuses costs what it cost until then, as in a run.
        await readDocument({ path, filename: basename(path) }, { name: 'inprocess' }).catch(() => undefined);
      }
      const c = process.cpuUsage(c0);
      cpu.push(((c.user + c.system) / 1e6).toFixed(2));
    }
    console.log(`${set.name}: Kilde's in-process extraction alone, CPU by round ${cpu.join(' / ')} s`);
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
