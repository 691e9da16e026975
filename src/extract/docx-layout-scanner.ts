import type { DiagramSignals } from './docx-layout.js';
import {
  type Box,
  countWords,
  emu,
  type Frame,
  headingLevelOfName,
  type Paragraph,
  SKIPPED,
  sortBoxes,
  type Table,
  VML_SHAPES,
  type VmlShape,
} from './docx-layout-parts.js';
import { vmlPosition, vmlSize } from './docx-vml.js';
import { checkTextSize, type ExtractionLimits, nestingExceeded } from './limits.js';
import { markdownTable } from './markdown-table.js';

/**
 * The SAX handler behind `readDocxLayout`. It keeps a stack of open paragraphs (a text box's
 * paragraphs sit inside the body paragraph that anchors it), of drawing frames and of tables.
 */
export class LayoutScanner {
  readonly signals: DiagramSignals = {
    shapes: 0,
    textBoxes: 0,
    drawingWords: 0,
    bodyWords: 0,
    bodyImages: 0,
    largestImageEmu: 0,
  };
  readonly blocks: string[] = [];
  readonly labels: string[] = [];
  private readonly stack: string[] = [];
  private skip = 0;
  private boxDepth = 0;
  private readonly frames: Frame[] = [];
  private readonly paragraphs: Paragraph[] = [];
  private readonly boxes: Box[] = [];
  private readonly tables: Table[] = [];
  private readonly vml: VmlShape[] = [];
  /** Offsets of the DrawingML shapes open now (`a:off` of their `wps:spPr`). */
  private readonly shapeOffsets: { x: number; y: number }[] = [];
  private inText = false;
  private posAxis: 'x' | 'y' | undefined;
  private inPosOffset = false;
  private boxCount = 0;
  private chars = 0;

  constructor(
    private readonly headings: ReadonlyMap<string, number>,
    private readonly wantText: boolean,
    private readonly limits: ExtractionLimits,
  ) {}

  handler() {
    return {
      onopentag: (name: string, a: Record<string, string>) => this.open(name, a),
      onclosetag: (name: string) => this.close(name),
      ontext: (text: string) => this.text(text),
    };
  }

  private open(name: string, a: Record<string, string>): void {
    this.stack.push(name);
    if (this.stack.length > this.limits.maxNesting) throw nestingExceeded(this.limits);
    if (this.skip > 0 || SKIPPED.has(name)) {
      this.skip++;
      return;
    }
    const parent = this.stack[this.stack.length - 2];
    switch (name) {
      case 'w:p':
        this.paragraphs.push({ text: '', heading: 0, list: false, boxes: [], inBox: this.boxDepth > 0 });
        break;
      case 'w:pStyle': {
        const p = this.paragraphs.at(-1);
        const level = this.headings.get(a['w:val'] ?? '') ?? headingLevelOfName(a['w:val'] ?? '');
        if (p && parent === 'w:pPr' && level !== undefined) p.heading = level;
        break;
      }
      case 'w:outlineLvl': {
        const p = this.paragraphs.at(-1);
        const n = Number(a['w:val']);
        if (p && parent === 'w:pPr' && p.heading === 0 && Number.isInteger(n) && n >= 0 && n < 6)
          p.heading = n + 1;
        break;
      }
      case 'w:numPr': {
        const p = this.paragraphs.at(-1);
        if (p && parent === 'w:pPr') p.list = true;
        break;
      }
      case 'w:t':
        this.inText = true;
        break;
      case 'w:tab':
      case 'w:br':
      case 'w:cr':
        if (parent === 'w:r') this.append(' ');
        break;
      case 'w:noBreakHyphen':
        this.append('-');
        break;
      case 'w:tbl':
        this.tables.push({ rows: [], row: undefined, cell: undefined, span: 1, after: 0 });
        break;
      case 'w:tr': {
        const t = this.tables.at(-1);
        if (t) {
          t.row = [];
          t.after = 0;
        }
        break;
      }
      case 'w:tc': {
        const t = this.tables.at(-1);
        if (t) {
          t.cell = [];
          t.span = 1;
        }
        break;
      }
      // Merged and missing cells keep their columns empty, so the rows of a GFM table line up.
      case 'w:gridSpan':
      case 'w:gridBefore':
      case 'w:gridAfter': {
        const t = this.tables.at(-1);
        const n = Number(a['w:val']);
        if (!t?.row || !Number.isInteger(n) || n < 1 || n > 63) break;
        if (name === 'w:gridSpan') t.span = n;
        else if (name === 'w:gridAfter') t.after = n;
        else for (let i = 0; i < n; i++) t.row.push('');
        break;
      }
      case 'wp:inline':
      case 'wp:anchor':
        this.frames.push({ cx: 0, cy: 0, x: 0, y: 0, picture: false });
        break;
      case 'wp:extent': {
        const f = this.frames.at(-1);
        if (f && (parent === 'wp:inline' || parent === 'wp:anchor')) {
          f.cx = emu(a.cx);
          f.cy = emu(a.cy);
        }
        break;
      }
      case 'wp:positionH':
      case 'wp:positionV':
        this.posAxis = name === 'wp:positionH' ? 'x' : 'y';
        break;
      case 'wp:posOffset':
        this.inPosOffset = this.posAxis !== undefined;
        break;
      case 'pic:pic': {
        this.signals.bodyImages++;
        const f = this.frames.at(-1);
        if (f) f.picture = true;
        break;
      }
      case 'wps:wsp':
        this.signals.shapes++;
        this.shapeOffsets.push({ x: 0, y: 0 });
        break;
      case 'a:off': {
        const s = this.shapeOffsets.at(-1);
        if (s && parent === 'a:xfrm' && this.stack[this.stack.length - 3] === 'wps:spPr') {
          s.x = emu(a.x);
          s.y = emu(a.y);
        }
        break;
      }
      case 'v:imagedata': {
        const v = this.vml.at(-1);
        if (v) v.image = true;
        break;
      }
      case 'w:txbxContent':
        this.openBox();
        break;
      default:
        if (VML_SHAPES.has(name)) this.vml.push({ style: a.style ?? '', image: name === 'v:image' });
    }
  }

  private close(name: string): void {
    this.stack.pop();
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    switch (name) {
      case 'w:p':
        this.closeParagraph();
        break;
      case 'w:t':
        this.inText = false;
        break;
      case 'w:tc': {
        const t = this.tables.at(-1);
        if (t?.row && t.cell) {
          t.row.push(t.cell.join(' '));
          for (let i = 1; i < t.span; i++) t.row.push('');
        }
        if (t) t.cell = undefined;
        break;
      }
      case 'w:tr': {
        const t = this.tables.at(-1);
        if (t?.row) for (let i = 0; i < t.after; i++) t.row.push('');
        if (t?.row && t.row.length > 0) t.rows.push(t.row);
        if (t) t.row = undefined;
        break;
      }
      case 'w:tbl':
        this.closeTable();
        break;
      case 'wp:inline':
      case 'wp:anchor': {
        const f = this.frames.pop();
        if (f?.picture) this.signals.largestImageEmu = Math.max(this.signals.largestImageEmu, f.cx * f.cy);
        break;
      }
      case 'wp:positionH':
      case 'wp:positionV':
        this.posAxis = undefined;
        break;
      case 'wp:posOffset':
        this.inPosOffset = false;
        break;
      case 'wps:wsp':
        this.shapeOffsets.pop();
        break;
      case 'w:txbxContent':
        this.closeBox();
        break;
      default:
        if (VML_SHAPES.has(name)) this.closeVml();
    }
  }

  private text(text: string): void {
    if (this.skip > 0) return;
    if (this.inText) this.append(text);
    else if (this.inPosOffset && this.posAxis) {
      const f = this.frames.at(-1);
      const n = Number(text.trim());
      if (f && Number.isFinite(n)) f[this.posAxis] = n;
    }
  }

  private append(text: string): void {
    const p = this.paragraphs.at(-1);
    if (!p) return;
    p.text += text;
    this.chars += text.length;
    checkTextSize(this.chars, this.limits);
  }

  private openBox(): void {
    this.signals.textBoxes++;
    this.boxDepth++;
    const frame = this.frames.at(-1);
    const shape = this.shapeOffsets.at(-1);
    const vml = this.vml.at(-1);
    const vmlAt = vml ? vmlPosition(vml.style) : undefined;
    this.boxes.push({
      paragraphs: [],
      x: (frame?.x ?? 0) + (shape?.x ?? 0) + (vmlAt?.x ?? 0),
      y: (frame?.y ?? 0) + (shape?.y ?? 0) + (vmlAt?.y ?? 0),
      order: this.boxCount++,
    });
  }

  private closeBox(): void {
    this.boxDepth--;
    const box = this.boxes.pop();
    if (!box) return;
    const anchor = this.paragraphs.at(-1);
    if (anchor) anchor.boxes.push(box);
    else if (this.wantText) this.emitBoxes([box]);
  }

  private closeParagraph(): void {
    const p = this.paragraphs.pop();
    if (!p) return;
    const text = p.text.replace(/\s+/g, ' ').trim();
    const words = countWords(text);
    if (p.inBox) this.signals.drawingWords += words;
    else this.signals.bodyWords += words;
    if (!this.wantText) return;
    const box = p.inBox ? this.boxes.at(-1) : undefined;
    if (box) {
      if (text) box.paragraphs.push(text);
      // A text box inside a text box: its text follows the paragraph that holds it.
      for (const inner of sortBoxes(p.boxes)) box.paragraphs.push(...inner.paragraphs);
      return;
    }
    const cell = this.tables.at(-1)?.cell;
    if (cell) {
      if (text) cell.push(text);
      for (const inner of sortBoxes(p.boxes)) cell.push(...inner.paragraphs);
      this.labels.push(
        ...sortBoxes(p.boxes)
          .map((b) => b.paragraphs.join(' '))
          .filter(Boolean),
      );
      return;
    }
    if (text) {
      const prefix = p.heading > 0 ? `${'#'.repeat(p.heading)} ` : p.list ? '- ' : '';
      this.blocks.push(prefix + text);
    }
    this.emitBoxes(p.boxes);
  }

  private emitBoxes(boxes: Box[]): void {
    for (const box of sortBoxes(boxes)) {
      if (box.paragraphs.length === 0) continue;
      this.blocks.push(box.paragraphs.join('\n\n'));
      this.labels.push(box.paragraphs.join(' '));
    }
  }

  private closeTable(): void {
    const t = this.tables.pop();
    if (!t || !this.wantText || t.rows.length === 0) return;
    const outer = this.tables.at(-1)?.cell;
    // A table inside a table cell is flattened into that cell.
    if (outer) outer.push(t.rows.map((r) => r.filter(Boolean).join(' ')).join(' '));
    else this.blocks.push(markdownTable(t.rows));
  }

  private closeVml(): void {
    const v = this.vml.pop();
    if (!v) return;
    if (!v.image) {
      this.signals.shapes++;
      return;
    }
    this.signals.bodyImages++;
    const size = vmlSize(v.style);
    if (size) this.signals.largestImageEmu = Math.max(this.signals.largestImageEmu, size.cx * size.cy);
  }
}
