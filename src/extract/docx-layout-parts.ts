/** The shapes `LayoutScanner` (docx-layout-scanner.ts) keeps while it reads word/document.xml, and its small helpers. */

/** A `wp:inline` or `wp:anchor`: where it sits and how large it is displayed. */
export interface Frame {
  cx: number;
  cy: number;
  x: number;
  y: number;
  picture: boolean;
}

export interface Paragraph {
  text: string;
  heading: number;
  list: boolean;
  /** Text boxes anchored in this paragraph. */
  boxes: Box[];
  inBox: boolean;
}

export interface Box {
  paragraphs: string[];
  x: number;
  y: number;
  order: number;
}

export interface Table {
  rows: string[][];
  row: string[] | undefined;
  cell: string[] | undefined;
  /** Columns the open cell spans (`w:gridSpan`). */
  span: number;
  /** Empty columns after the open row's cells (`w:gridAfter`). */
  after: number;
}

export interface VmlShape {
  style: string;
  image: boolean;
}

/** VML elements that draw something (a `v:shapetype` only defines a template). */
export const VML_SHAPES = new Set([
  'v:shape',
  'v:rect',
  'v:roundrect',
  'v:oval',
  'v:line',
  'v:polyline',
  'v:arc',
  'v:curve',
  'v:image',
]);
/** Subtrees that never count: the fallback copy of a DrawingML object, VML templates. */
export const SKIPPED = new Set(['mc:Fallback', 'v:shapetype']);
/** Rows of positions closer than this (EMU, a tenth of an inch) read as one line, left to right. */
const ROW_EMU = 91_440;

/** Reading order: top to bottom in rows a tenth of an inch high, then left to right, then document order. */
export function sortBoxes(boxes: readonly Box[]): Box[] {
  return [...boxes].sort(
    (a, b) => Math.round(a.y / ROW_EMU) - Math.round(b.y / ROW_EMU) || a.x - b.x || a.order - b.order,
  );
}

export function countWords(text: string): number {
  return text === '' ? 0 : text.split(' ').length;
}

export function emu(value: string | undefined): number {
  const n = Number(value);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** A paragraph style name's heading level (`heading N`, `Title`, `Subtitle`). */
export function headingLevelOfName(name: string): number | undefined {
  const n = name.trim().toLowerCase();
  const m = /^heading\s*([1-6])$/.exec(n);
  if (m) return Number(m[1]);
  if (n === 'title') return 1;
  if (n === 'subtitle') return 2;
  return undefined;
}
