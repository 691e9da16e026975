/**
 * Page rendering for the vision engines: pages/s and peak RSS rasterising PDFs at 150 DPI in the
 * worker pool (as `vision-llm` does), a 20-page report and real documents, then a DOCX converted by
 * the office renderer (a local LibreOffice, or OFFICE_RENDER_URL's Gotenberg) and rendered. Prints
 * figures; asserts nothing. Run: npm run bench:render
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { ownPool } from '../src/extract/create-extractor.js';
import { createGotenbergRenderer, createLocalOfficeRenderer } from '../src/extract/vision/office-render.js';
import {
  diagramPng,
  drawingParagraph,
  flowchartBody,
  INCH,
  paragraph,
  picture,
  writeTestDocx,
} from '../test/extract/docx-builder.js';
import { settings } from '../test/extract/helpers.js';
import { DOCUMENTS } from '../test/fixtures/index.js';
import { treeRss } from './lib/tree-rss.js';

const DPI = 150;
const MiB = 1024 * 1024;
const log = pino({ level: 'silent' });

/** A PDF report: per page a heading, 45 lines of Helvetica and a small flowchart of boxes and arrows. */
async function writeReportPdf(path: string, pages: number): Promise<void> {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body);
  add('<< /Type /Catalog /Pages 2 0 R >>');
  add(''); // the page tree, filled in below
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>');
  const kids: number[] = [];
  for (let p = 0; p < pages; p++) {
    const ops = [`BT /F2 18 Tf 72 740 Td (Section ${p + 1}: case handling) Tj ET`];
    for (let l = 0; l < 45; l++) {
      ops.push(
        `BT /F1 10 Tf 72 ${712 - l * 12} Td (Line ${l + 1}: the applicant submits the form, the office checks the attachments and registers the case.) Tj ET`,
      );
    }
    for (let b = 0; b < 4; b++) {
      const x = 90 + b * 120;
      ops.push(`${x} 100 90 40 re S`, `BT /F1 9 Tf ${x + 8} 117 Td (Step ${b + 1}) Tj ET`);
      if (b < 3) ops.push(`${x + 90} 120 m ${x + 120} 120 l S`);
    }
    const stream = ops.join('\n');
    add(`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`);
    const contents = objects.length;
    add(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents ${contents} 0 R >>`,
    );
    kids.push(objects.length);
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${pages} >>`;
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  await writeFile(path, out, 'latin1');
}

/** Samples the RSS of this process and its worker processes every 20 ms while `fn` runs. */
async function measured<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; ms: number; before: number; peak: number }> {
  const before = treeRss();
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, treeRss());
  }, 20);
  const started = performance.now();
  try {
    const value = await fn();
    peak = Math.max(peak, treeRss());
    return { value, ms: performance.now() - started, before, peak };
  } finally {
    clearInterval(timer);
  }
}

const mib = (bytes: number) => `${(bytes / MiB).toFixed(bytes < 10 * MiB ? 1 : 0)} MiB`;

const tmp = await mkdtemp(join(tmpdir(), 'kilde-bench-render-'));
const pool = ownPool(settings({ EXTRACTION_WORKERS: '1' }), { log });
try {
  const report = join(tmp, 'report-20.pdf');
  await writeReportPdf(report, 20);
  const long = join(tmp, 'report-60.pdf');
  await writeReportPdf(long, 60);
  // Warm-up: the worker starts and loads pdf.js and Skia once.
  await pool.run({ kind: 'render', path: join(DOCUMENTS, 'right_to_left_01.pdf'), dpi: 72, maxPages: 1 });

  const render = async (label: string, path: string, maxPages: number) => {
    const r = await measured(() => pool.run({ kind: 'render', path, dpi: DPI, maxPages }));
    const pages = r.value.pages.length;
    const png = r.value.pages.reduce((n, p) => n + p.png.byteLength, 0);
    const size = r.value.pages[0] ? `${r.value.pages[0].width}×${r.value.pages[0].height}` : '-';
    console.log(
      `  ${label}: ${pages} pages (${size} px) in ${(r.ms / 1000).toFixed(2)} s = ${(pages / (r.ms / 1000)).toFixed(1)} pages/s; PNG ${mib(png)} (${mib((png * 4) / 3)} as base64); RSS ${mib(r.before)} → peak ${mib(r.peak)}`,
    );
  };

  console.log(`PDF → PNG at ${DPI} DPI in the worker pool (1 worker)`);
  await render('generated report, 20 pages (text and a drawing per page)', report, 20);
  await render('generated report, first 20 of 60 pages', long, 20);
  await render('generated report, all 60 pages (memory stays per page)', long, 60);
  await render('normal_4pages.pdf (Korean report, images)', join(DOCUMENTS, 'normal_4pages.pdf'), 20);
  await render('code_and_formula.pdf', join(DOCUMENTS, 'code_and_formula.pdf'), 20);
  await render('multi_page.pdf', join(DOCUMENTS, 'multi_page.pdf'), 20);

  console.log(`DOCX → PDF (office renderer) → PNG at ${DPI} DPI`);
  const docx = join(tmp, 'flow.docx');
  // Ten sections of text (about eight pages), a flowchart of text boxes and a pasted diagram.
  const labels = Array.from({ length: 12 }, (_, i) => `Step ${i + 1}: a box of the flowchart`);
  const sections = Array.from(
    { length: 10 },
    (_, s) =>
      paragraph(`Section ${s + 1}`, 'Heading1') +
      Array.from({ length: 8 }, (_, p) =>
        paragraph(
          `Paragraph ${p + 1}. The applicant submits the form, the office checks the attachments, registers the case and decides within the deadline set by the rules; every step is logged. `.repeat(
            3,
          ),
        ),
      ).join(''),
  ).join('');
  await writeTestDocx(docx, {
    body:
      sections +
      flowchartBody(labels, 'Figure 1') +
      paragraph('Figure 2') +
      drawingParagraph(picture('rIdImg1', 6 * INCH, 4 * INCH)),
    images: { rIdImg1: diagramPng(['Start', 'Check', 'Decide', 'Send', 'Archive']) },
  });
  const url = process.env.OFFICE_RENDER_URL;
  const hasSoffice = spawnSync('soffice', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!url && !hasSoffice) {
    console.log('  skipped: no soffice on the PATH and no OFFICE_RENDER_URL');
  } else {
    const office = url
      ? createGotenbergRenderer({ baseUrl: url, timeoutMs: 300_000, maxBytes: 256 * MiB })
      : createLocalOfficeRenderer({ timeoutMs: 300_000, maxBytes: 256 * MiB, log });
    for (const round of ['first (LibreOffice profile created)', 'second']) {
      const out = await mkdtemp(join(tmp, 'office-'));
      const converted = await measured(() =>
        office.toPdf({ path: docx, filename: 'flow.docx' }, 'docx', out),
      );
      console.log(`  ${office.name} conversion, ${round}: ${(converted.ms / 1000).toFixed(2)} s`);
      await render('its PDF', converted.value, 20);
    }
    await office.close?.();
  }
} finally {
  await pool.close();
  await rm(tmp, { recursive: true, force: true });
}
