/**
 * Zip bombs against `kilde serve all` in this process (issue #31): how long until the upload is
 * refused, and the peak resident memory of this process and its extraction workers meanwhile. Each
 * bomb is judged under the default limits and under the limits before issue #31
 * (`EXTRACTION_MAX_COMPRESSION_RATIO=500`: a bomb under the 256 MiB archive limit then reached its
 * reader, which parsed it until the text limit or the time-out). Prints figures; asserts nothing.
 * Run: npx tsx bench/zip-bombs.ts [--before]   (`--before` adds the slow runs: minutes each)
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wParagraph, writeDocx, writeXlsxBomb, writeZip } from '../test/reliability/hostile-documents.js';
import { startServer, upload } from '../test/reliability/hostile-server.js';
import { treeRss } from './lib/tree-rss.js';

const MiB = 1024 * 1024;
const before = process.argv.includes('--before');

const BOMBS: Array<{ name: string; file: string; make: (p: string) => Promise<void> }> = [
  {
    name: 'DOCX, 250 MB of XML in one entry',
    file: 'bomb.docx',
    make: (p) => writeDocx(p, { chunk: wParagraph('x'.repeat(1000)).repeat(1000), times: 250 }),
  },
  { name: 'XLSX, 250 MB of cells in one sheet', file: 'bomb.xlsx', make: (p) => writeXlsxBomb(p, 250) },
  {
    name: 'PPTX, 200 entries of 0.94 MiB each',
    file: 'many.pptx',
    make: (p) =>
      writeZip(p, [
        { name: '[Content_Types].xml', data: Buffer.from('<Types/>') },
        { name: 'ppt/presentation.xml', data: Buffer.from('<p:presentation/>') },
        ...Array.from({ length: 200 }, (_, i) => ({
          name: `ppt/slides/slide${i + 1}.xml`,
          data: { chunk: Buffer.alloc(64 * 1024, 32), times: 15 },
        })),
      ]),
  },
];

const dir = await mkdtemp(join(tmpdir(), 'kilde-bench-bombs-'));
try {
  for (const bomb of BOMBS) await bomb.make(join(dir, bomb.file));
  const settings: Array<[string, Record<string, string>]> = [['defaults', {}]];
  if (before) settings.push(['ratio 500:1 (before)', { EXTRACTION_MAX_COMPRESSION_RATIO: '500' }]);
  for (const [label, env] of settings) {
    const server = await startServer(env);
    try {
      // A worker started and its readers loaded first: the figures are the bombs', not a cold start's.
      await writeDocx(join(dir, 'warm.docx'), wParagraph('An ordinary paragraph.').repeat(20));
      await upload(server, join(dir, 'warm.docx'));
      for (const bomb of BOMBS) {
        const path = join(dir, bomb.file);
        const bytes = (await stat(path)).size;
        const base = treeRss();
        let peak = base;
        const timer = setInterval(() => {
          peak = Math.max(peak, treeRss());
        }, 100);
        const started = performance.now();
        const answer = await upload(server, path);
        const ms = performance.now() - started;
        clearInterval(timer);
        peak = Math.max(peak, treeRss());
        console.log(
          `${label.padEnd(22)} ${bomb.name.padEnd(36)} ${(bytes / MiB).toFixed(2)} MiB  ${answer.status}  ${ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`}  peak +${Math.round((peak - base) / MiB)} MiB  ${answer.body.error ?? ''}`,
        );
      }
    } finally {
      await server.close();
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
