/**
 * Extraction under load: HTML → Markdown conversion time at 10k/20k/40k paragraphs, long DOCX
 * files, and — against `kilde serve all` in this process — /health latency and RSS while hostile
 * documents are processed in the worker pool. Prints figures; asserts nothing.
 * Run: npm run bench:extract
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { htmlToMarkdown } from '../src/extract/inprocess/html.js';
import { readDocument } from '../src/extract/inprocess-engine.js';
import { DEFAULT_LIMITS } from '../src/extract/limits.js';
import { wParagraph, writeDocx, writePdf, writeXlsxBomb } from '../test/reliability/hostile-documents.js';
import { startServer, upload } from '../test/reliability/hostile-server.js';
import { percentile } from './lib/stats.js';
import { treeRss } from './lib/tree-rss.js';

const MiB = 1024 * 1024;
const cpuMs = (from: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(from);
  return Math.round((u.user + u.system) / 1000);
};

function page(paragraphs: number): string {
  const out = ['<html><head><title>Report</title></head><body><h1>Report</h1>'];
  for (let i = 0; i < paragraphs; i++) {
    if (i % 50 === 0) out.push(`<h2>Section ${i / 50 + 1}</h2>`);
    out.push(`<p>Paragraph ${i} has <b>bold</b> and <a href="/x/${i}">a link</a> among ordinary words.</p>`);
    if (i % 200 === 0) {
      out.push('<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>');
      out.push('<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>');
    }
  }
  out.push('</body></html>');
  return out.join('');
}

const tmp = await mkdtemp(join(tmpdir(), 'kilde-bench-extract-'));
try {
  console.log('HTML -> Markdown (one thread, CPU time)');
  htmlToMarkdown(page(1000), DEFAULT_LIMITS); // warm-up
  for (const n of [10_000, 20_000, 40_000]) {
    const html = page(n);
    const from = process.cpuUsage();
    const md = htmlToMarkdown(html, DEFAULT_LIMITS);
    console.log(
      `  ${n.toLocaleString('en')} paragraphs (${(html.length / MiB).toFixed(1)} MiB): ${cpuMs(from)} ms CPU, ${md.length.toLocaleString('en')} chars out`,
    );
  }

  console.log('Long DOCX (mammoth + conversion, one thread, CPU time)');
  for (const mib of [2, 10]) {
    const path = join(tmp, `long-${mib}.docx`);
    const para = wParagraph('A long report repeats its ordinary sentences many times over. '.repeat(4));
    const heading = wParagraph('Chapter heading', 'Heading1');
    const unit = heading + para.repeat(20);
    await writeDocx(path, unit.repeat(Math.ceil((mib * MiB) / unit.length)));
    const from = process.cpuUsage();
    const { content } = await readDocument({ path, filename: 'long.docx' }, { name: 'inprocess' });
    console.log(
      `  ${mib} MiB document.xml (${((await stat(path)).size / 1024).toFixed(0)} KB zipped): ${cpuMs(from)} ms CPU, ${content.text.length.toLocaleString('en')} chars out`,
    );
  }

  console.log('serve all while hostile documents are processed (/health sampled back to back)');
  const server = await startServer();
  const files: Array<[string, string, () => Promise<void>]> = [
    [
      'DOCX zip bomb, 300 MB',
      'bomb.docx',
      () =>
        writeDocx(join(tmp, 'bomb.docx'), { chunk: wParagraph('x'.repeat(1000)).repeat(1000), times: 300 }),
    ],
    ['XLSX zip bomb, 300 MB', 'bomb.xlsx', () => writeXlsxBomb(join(tmp, 'bomb.xlsx'), 300)],
    ['PDF, 10,000 pages', 'pages.pdf', () => writePdf(join(tmp, 'pages.pdf'), 10_000)],
    [
      'HTML, 1,000,000 nested <div>',
      'deep.html',
      () => writeFile(join(tmp, 'deep.html'), `<html><body>${'<div>'.repeat(1_000_000)}x`),
    ],
    ['PDF, 4,000 pages (read in full)', 'long.pdf', () => writePdf(join(tmp, 'long.pdf'), 4_000)],
    [
      'HTML, 40,000 paragraphs (read in full)',
      'long.html',
      () => writeFile(join(tmp, 'long.html'), page(40_000)),
    ],
  ];
  try {
    for (const [label, file, make] of files) {
      await make();
      const rss0 = treeRss();
      let peak = rss0;
      const latencies: number[] = [];
      let done = false;
      const started = performance.now();
      const job = upload(server, join(tmp, file)).finally(() => {
        done = true;
      });
      while (!done) {
        const t = performance.now();
        const res = await fetch(`${server.url}/health`);
        await res.arrayBuffer();
        latencies.push(performance.now() - t);
        peak = Math.max(peak, treeRss());
      }
      const answer = await job;
      const took = performance.now() - started;
      latencies.sort((a, b) => a - b);
      console.log(
        `  ${label}: ${answer.status} ${answer.body.code ?? ''} in ${Math.round(took)} ms; /health x${latencies.length} p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${(latencies.at(-1) ?? 0).toFixed(1)} ms; RSS ${Math.round(rss0 / MiB)} -> peak ${Math.round(peak / MiB)} MiB`,
      );
    }
  } finally {
    await server.close();
  }
} finally {
  await rm(tmp, { recursive: true, force: true });
}
