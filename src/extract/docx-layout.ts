import { Parser } from 'htmlparser2';
import yauzl from 'yauzl';
import { KildeError } from '../errors.js';
import { extractionFailed, reasonOf } from './document.js';
import { headingLevelOfName } from './docx-layout-parts.js';
import { LayoutScanner } from './docx-layout-scanner.js';
import { tidyMarkdown } from './inprocess/content.js';
import { checkTextSize, type ExtractionLimits, nestingExceeded } from './limits.js';
import { type CoreProperties, corePropertiesFromXml } from './ooxml-core.js';
import { checkArchive } from './zip-guard.js';

/**
 * What the main document part of a DOCX (`word/document.xml`) says about its drawings: the inputs
 * of the `auto` router's two signals (docs/extraction.md). Only the main
 * part is read, so pictures in headers and footers (logos) never count.
 */
export interface DiagramSignals {
  /** Drawing shapes: DrawingML `wps:wsp` (text boxes, connectors, plain shapes) and VML shapes that are not pictures. */
  shapes: number;
  /** Text boxes among them (`w:txbxContent`). */
  textBoxes: number;
  /** Words inside text boxes. */
  drawingWords: number;
  /** Words of the body: paragraphs and tables outside any text box. */
  bodyWords: number;
  /** Pictures: DrawingML `pic:pic` and VML `v:imagedata` (a pasted picture, an embedded object's preview). */
  bodyImages: number;
  /** Displayed area of the largest picture, `cx·cy` of the `wp:extent` of its drawing, squared EMU. */
  largestImageEmu: number;
}

export interface DocxLayout {
  signals: DiagramSignals;
  /** The native text as Markdown (when asked for): body and tables in order, each paragraph followed by the text boxes anchored in it, in reading order. */
  markdown?: string;
  /** The text boxes' texts in reading order (the labels of a vector flowchart). */
  labels?: string[];
  metadata?: CoreProperties;
}

const MAIN_PART = 'word/document.xml';
const STYLES_PART = 'word/styles.xml';
const CORE_PART = 'docProps/core.xml';

/**
 * Reads a DOCX's main part in one streaming pass: the diagram signals, and with `text` the native
 * Markdown. The package is first judged by `checkArchive` (entry count, sizes, compression ratio,
 * entity declarations, nesting), so a zip or entity bomb fails cleanly before anything is parsed;
 * the XML parser itself expands no entities beyond the five predefined ones and character
 * references. Runs in the extraction worker pool.
 */
export async function readDocxLayout(
  path: string,
  limits: ExtractionLimits,
  opts: { text: boolean },
): Promise<DocxLayout> {
  try {
    return await scanDocx(path, limits, opts);
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw extractionFailed(`Could not read DOCX file: ${reasonOf(err)}`, undefined, err);
  }
}

async function scanDocx(
  path: string,
  limits: ExtractionLimits,
  opts: { text: boolean },
): Promise<DocxLayout> {
  await checkArchive(path, limits);
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false, strictFileNames: false });
  try {
    const entries = new Map<string, yauzl.Entry>();
    for await (const entry of zip.eachEntry()) entries.set(entry.fileName, entry);
    const main = entries.get(MAIN_PART);
    if (!main) throw new Error(`the package has no ${MAIN_PART}`);
    const styles = opts.text ? await headingStyles(zip, entries.get(STYLES_PART), limits) : new Map();
    const scanner = new LayoutScanner(styles, opts.text, limits);
    const parser = new Parser(scanner.handler(), {
      xmlMode: true,
      decodeEntities: true,
      recognizeSelfClosing: true,
    });
    const decoder = new TextDecoder('utf-8');
    for await (const chunk of await zip.openReadStreamPromise(main)) {
      parser.write(decoder.decode(chunk as Uint8Array, { stream: true }));
    }
    parser.write(decoder.decode());
    parser.end();
    const layout: DocxLayout = { signals: scanner.signals };
    if (opts.text) {
      layout.markdown = tidyMarkdown(scanner.blocks.join('\n\n'));
      checkTextSize(layout.markdown.length, limits);
      layout.labels = scanner.labels;
      const core = entries.get(CORE_PART);
      layout.metadata = core ? corePropertiesFromXml(await readText(zip, core)) : {};
    }
    return layout;
  } finally {
    zip.close();
  }
}

async function readText(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of await zip.openReadStreamPromise(entry)) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** Paragraph style id → heading level, from `word/styles.xml` (`heading N`, `Title`, `Subtitle`, or an outline level). */
async function headingStyles(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry | undefined,
  limits: ExtractionLimits,
): Promise<Map<string, number>> {
  const levels = new Map<string, number>();
  if (!entry) return levels;
  let id: string | undefined;
  let depth = 0;
  const parser = new Parser(
    {
      onopentag(name, a) {
        if (++depth > limits.maxNesting) throw nestingExceeded(limits);
        if (name === 'w:style') id = a['w:type'] === 'paragraph' ? a['w:styleId'] : undefined;
        else if (id !== undefined && name === 'w:name') {
          const level = headingLevelOfName(a['w:val'] ?? '');
          if (level !== undefined) levels.set(id, level);
        } else if (id !== undefined && name === 'w:outlineLvl' && !levels.has(id)) {
          const n = Number(a['w:val']);
          if (Number.isInteger(n) && n >= 0 && n < 6) levels.set(id, n + 1);
        }
      },
      onclosetag(name) {
        depth--;
        if (name === 'w:style') id = undefined;
      },
    },
    { xmlMode: true, recognizeSelfClosing: true },
  );
  parser.write(await readText(zip, entry));
  parser.end();
  return levels;
}
