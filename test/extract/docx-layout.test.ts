import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDocxLayout } from '../../src/extract/docx-layout.js';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { judgeSignals, type RouterThresholds } from '../../src/extract/routing.js';
import { ENTITY_BOMB_DOCTYPE, wParagraph, writeDocx } from '../reliability/hostile-documents.js';
import {
  diagramPng,
  drawingParagraph,
  flowchartBody,
  INCH,
  paragraph,
  picture,
  textBox,
  writeTestDocx,
} from './docx-builder.js';
import { DOCS, failure } from './helpers.js';

/** The contract's defaults (EXTRACTION_ROUTER_*). */
const DEFAULTS: RouterThresholds = {
  minTextboxes: 20,
  drawingRatio: 2.0,
  minBodyImages: 1,
  minImageEmu: 1_500_000_000_000,
  minImageWordRatio: 0,
};

const LABELS = [
  'Modtag ansøgning',
  'Registrer sagen i systemet',
  'Kontroller bilag',
  'Mangler der oplysninger?',
  'Send brev til ansøger',
  'Vurder ansøgningen',
  'Indstil til afgørelse',
  'Godkend afgørelse',
  'Send afgørelse',
  'Arkiver sagen',
  'Opdater statistik',
  'Afslut sagen',
];

const words = (n: number) => Array.from({ length: n }, (_, i) => `ord${i}`).join(' ');

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-docx-layout-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function layoutOf(name: string, doc: Parameters<typeof writeTestDocx>[1]) {
  const path = join(dir, name);
  await writeTestDocx(path, doc);
  return readDocxLayout(path, DEFAULT_LIMITS, { text: true });
}

describe('DOCX diagram signals (word/document.xml only)', () => {
  it('a flowchart of text boxes: shapes, text-box words and body words are counted; signal one fires', async () => {
    const layout = await layoutOf('flow.docx', { body: flowchartBody(LABELS, 'Sagsgang') });
    const boxWords = LABELS.join(' ').split(' ').length;
    expect(layout.signals).toEqual({
      shapes: 23, // 12 text boxes + 11 connectors; the VML fallback copies are not counted again
      textBoxes: 12,
      drawingWords: boxWords,
      bodyWords: 1,
      bodyImages: 0,
      largestImageEmu: 0,
    });
    const verdict = judgeSignals(layout.signals, DEFAULTS);
    expect(verdict).toMatchObject({ vector: true, raster: false, signal: 'vector-flowchart' });
    expect(verdict.drawingRatio).toBe(boxWords);
  });

  it('reads text boxes in reading order (top to bottom, then left to right), not in XML order', async () => {
    // Written bottom-up and right-to-left in the XML.
    const runs = [
      textBox('Fjerde', 4 * INCH, 3 * INCH),
      textBox('Tredje', 1 * INCH, 3 * INCH + 20_000),
      textBox('Anden', 4 * INCH, 1 * INCH),
      textBox('Første', 1 * INCH, 1 * INCH),
    ];
    const layout = await layoutOf('order.docx', {
      body: paragraph('Overskrift', 'Heading1') + drawingParagraph(...runs) + paragraph('Efter tegningen'),
    });
    expect(layout.labels).toEqual(['Første', 'Anden', 'Tredje', 'Fjerde']);
    expect(layout.markdown).toBe('# Overskrift\n\nFørste\n\nAnden\n\nTredje\n\nFjerde\n\nEfter tegningen');
  });

  it('too few shapes, or more body text than drawing text, does not fire signal one', async () => {
    const few = await layoutOf('few.docx', { body: flowchartBody(LABELS.slice(0, 5)) });
    expect(few.signals.shapes).toBe(9);
    expect(judgeSignals(few.signals, DEFAULTS).signal).toBe('none');

    const wordy = await layoutOf('wordy.docx', { body: flowchartBody(LABELS) + paragraph(words(400)) });
    expect(wordy.signals.shapes).toBe(23);
    const verdict = judgeSignals(wordy.signals, DEFAULTS);
    expect(verdict.drawingRatio).toBeLessThan(2);
    expect(verdict.signal).toBe('none');
  });

  it('a pasted diagram picture fires signal two from its displayed size (wp:extent), a small one does not', async () => {
    const png = diagramPng(['Start', 'Slut']);
    const big = await layoutOf('big.docx', {
      body: paragraph('Figur 1') + drawingParagraph(picture('rIdImg1', 6 * INCH, 4 * INCH)),
      images: { rIdImg1: png },
    });
    expect(big.signals).toMatchObject({ bodyImages: 1, largestImageEmu: 24 * INCH * INCH, shapes: 0 });
    expect(judgeSignals(big.signals, DEFAULTS)).toMatchObject({ raster: true, signal: 'raster-figure' });

    const small = await layoutOf('small.docx', {
      body: paragraph('Ikon') + drawingParagraph(picture('rIdImg1', INCH, INCH)),
      images: { rIdImg1: png },
    });
    expect(small.signals.largestImageEmu).toBe(INCH * INCH);
    expect(judgeSignals(small.signals, DEFAULTS).signal).toBe('none');
  });

  it('a logo in the header never counts: only the main document part is read', async () => {
    const logo = diagramPng(['LOGO'], 400, 200);
    const layout = await layoutOf('header.docx', {
      body: paragraph(words(50)),
      header: { body: drawingParagraph(picture('rIdLogo', 7 * INCH, 2 * INCH)), images: { rIdLogo: logo } },
    });
    expect(layout.signals).toMatchObject({ bodyImages: 0, largestImageEmu: 0, bodyWords: 50 });
    expect(judgeSignals(layout.signals, DEFAULTS).signal).toBe('none');
  });

  it('the image-to-word guard keeps a long report with one large picture on the default route', async () => {
    const layout = await layoutOf('report.docx', {
      body: paragraph(words(500)) + drawingParagraph(picture('rIdImg1', 2 * INCH, INCH)),
      images: { rIdImg1: diagramPng(['A', 'B']) },
    });
    expect(layout.signals.largestImageEmu).toBe(2 * INCH * INCH); // 1.67e12 ≥ 1.5e12
    expect(judgeSignals(layout.signals, DEFAULTS).signal).toBe('raster-figure');
    const guarded = judgeSignals(layout.signals, { ...DEFAULTS, minImageWordRatio: 1e10 });
    expect(guarded.imageWordRatio).toBeCloseTo((2 * INCH * INCH) / 500);
    expect(guarded.signal).toBe('none');
    // The same picture with a one-line caption passes the guard.
    const captioned = await layoutOf('captioned.docx', {
      body: paragraph('Figur') + drawingParagraph(picture('rIdImg1', 2 * INCH, INCH)),
      images: { rIdImg1: diagramPng(['A', 'B']) },
    });
    expect(judgeSignals(captioned.signals, { ...DEFAULTS, minImageWordRatio: 1e10 }).signal).toBe(
      'raster-figure',
    );
  });

  it('a VML picture (an embedded object preview) counts with the size in its style', async () => {
    const vml =
      '<w:p><w:r><w:pict><v:shape style="width:432pt;height:288pt"><v:imagedata r:id="rIdImg1"/></v:shape></w:pict></w:r></w:p>';
    const layout = await layoutOf('vml.docx', { body: vml, images: { rIdImg1: diagramPng(['X']) } });
    expect(layout.signals).toMatchObject({
      bodyImages: 1,
      shapes: 0,
      largestImageEmu: 432 * 12700 * 288 * 12700,
    });
  });
});

describe('DOCX diagram signals of the real fixtures (docling test suite)', () => {
  it.each([
    // A picture inside a text box, 4.06 × 3.43 in, and a chart: a raster figure.
    [
      'drawingml.docx',
      'raster-figure',
      { shapes: 5, textBoxes: 3, bodyImages: 1, largestImageEmu: 11_637_115_741_330 },
    ],
    // Four pictures in a group 2.36 × 1.16 in (2.29e12) and two ungrouped ones.
    [
      'docx_grouped_images.docx',
      'raster-figure',
      { shapes: 0, bodyImages: 6, largestImageEmu: 2_285_910_261_800 },
    ],
    // Three small icons (the largest 0.57 in square): an ordinary document.
    ['word_image_anchors.docx', 'none', { shapes: 0, bodyImages: 3, largestImageEmu: 271_128_490_000 }],
    ['lorem_ipsum.docx', 'none', { shapes: 0, bodyImages: 0, largestImageEmu: 0 }],
    ['word_tables.docx', 'none', { shapes: 0, bodyImages: 0 }],
  ])('%s → %s', async (name, signal, expected) => {
    const layout = await readDocxLayout(join(DOCS, name), DEFAULT_LIMITS, { text: false });
    expect(layout.signals).toMatchObject(expected);
    expect(layout.markdown).toBeUndefined();
    expect(judgeSignals(layout.signals, DEFAULTS).signal).toBe(signal);
  });

  it('native text of drawingml.docx holds the words of its text boxes', async () => {
    const layout = await readDocxLayout(join(DOCS, 'drawingml.docx'), DEFAULT_LIMITS, { text: true });
    expect(layout.labels).toEqual(['Text 1', 'Text 2', 'Fig – Torque v/s Speed characteristics']);
    expect(layout.markdown).toContain('Fig – Torque v/s Speed characteristics');
  });

  it('tables become GFM tables with merged cells kept in their columns', async () => {
    const layout = await readDocxLayout(join(DOCS, 'word_tables.docx'), DEFAULT_LIMITS, { text: true });
    expect(layout.markdown).toContain(
      '| Header 0.0 | Header 0.1 | Header 0.2 |\n| --- | --- | --- |\n| Cell 1.0 | Merged Cell 1.1 1.2 |  |',
    );
  });
});

describe('DOCX package safety', () => {
  it('a zip bomb fails cleanly from the central directory, before anything is parsed', async () => {
    const path = join(dir, 'bomb.docx');
    // 20 MB of XML in a few KB; the limit lowered so the test stays small.
    await writeDocx(path, { chunk: wParagraph('a'.repeat(1000)), times: 20_000 });
    const limits = { ...DEFAULT_LIMITS, maxArchiveBytes: 8 * 1024 * 1024 };
    const err = await failure(readDocxLayout(path, limits, { text: false }));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
    expect(err.message).toBe(
      'Document exceeds an extraction limit: more than 8 MiB uncompressed in the package (EXTRACTION_MAX_ARCHIVE_BYTES)',
    );
  });

  it('an entity bomb is refused, never expanded', async () => {
    const path = join(dir, 'entities.docx');
    await writeDocx(path, wParagraph('&c;'), ENTITY_BOMB_DOCTYPE);
    const err = await failure(readDocxLayout(path, DEFAULT_LIMITS, { text: false }));
    expect(err.message).toBe('The package part word/document.xml declares XML entities, which are refused');
  });

  it('a package without word/document.xml is EXTRACTION_FAILED 422', async () => {
    const path = join(dir, 'not-word.docx');
    const { writeZip } = await import('../reliability/hostile-documents.js');
    await writeZip(path, [{ name: 'hello.txt', data: Buffer.from('hi') }]);
    const err = await failure(readDocxLayout(path, DEFAULT_LIMITS, { text: false }));
    expect(err).toMatchObject({
      statusCode: 422,
      message: 'Could not read DOCX file: the package has no word/document.xml',
    });
  });
});
