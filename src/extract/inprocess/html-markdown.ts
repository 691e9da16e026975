import { Parser } from 'htmlparser2';
import { nestingExceeded } from '../limits.js';
import { markdownTable } from '../markdown-table.js';
import { tidyMarkdown } from './content.js';

/**
 * `htmlToMarkdown` with the blank-line runs collapsed: what the HTML and DOCX readers return. Here,
 * not in html.ts, so reading a DOCX does not load html.ts's DOM (linkedom, ~0.15 s of CPU per worker).
 */
export function htmlToTidyMarkdown(html: string, opts: { maxNesting: number }): string {
  return tidyMarkdown(htmlToMarkdown(html, opts));
}

/**
 * HTML → Markdown in one streaming pass over htmlparser2's events, so time and memory grow
 * linearly with the document (the converters measured before — node-html-markdown, turndown,
 * rehype-remark — are quadratic or several times slower; see docs/decisions.md). Headings stay
 * `#` headings, lists keep their nesting, tables become GFM tables, bold/italic/code keep their
 * marks; links keep their text only and images, scripts, navigation and the head are dropped.
 * Nesting deeper than `maxNesting` open elements stops the parse with EXTRACTION_FAILED.
 */
export function htmlToMarkdown(html: string, opts: { maxNesting: number }): string {
  const converter = new Converter();
  let depth = 0;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        depth++;
        if (depth > opts.maxNesting) throw nestingExceeded(opts);
        converter.open(name, attribs);
      },
      onclosetag(name) {
        depth--;
        converter.close(name);
      },
      ontext(text) {
        converter.text(text);
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  return converter.finish();
}

const SKIPPED = new Set([
  'script',
  'style',
  'noscript',
  'template',
  'svg',
  'math',
  'iframe',
  'object',
  'canvas',
  'nav',
  'head',
  'select',
  'button',
]);
const HEADINGS: Record<string, number> = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };
const BOLD = new Set(['b', 'strong']);
const ITALIC = new Set(['i', 'em']);
const CODE = new Set(['code', 'kbd', 'samp', 'tt']);
const LISTS = new Set(['ul', 'ol', 'menu']);
const CELLS = new Set(['td', 'th']);
/** Elements that end the running paragraph; every other element is inline. */
const BLOCKS = new Set([
  'html',
  'body',
  'div',
  'p',
  'section',
  'article',
  'main',
  'header',
  'footer',
  'aside',
  'address',
  'figure',
  'figcaption',
  'details',
  'summary',
  'form',
  'fieldset',
  'legend',
  'center',
  'hgroup',
  'dialog',
  'search',
  'dl',
  'dt',
  'dd',
  'caption',
  'thead',
  'tbody',
  'tfoot',
  'colgroup',
]);
const WHITESPACE = /[ \t\n\r\f\u00a0]+/g;

type FrameKind = 'block' | 'heading' | 'pre' | 'quote' | 'list' | 'item' | 'table' | 'row' | 'cell';

/** A block being built: finished blocks below it plus the paragraph still running. */
interface Frame {
  kind: FrameKind;
  tag: string;
  blocks: string[];
  inline: Inline;
  level?: number;
  ordered?: boolean;
  start?: number;
  /** Rows of a table frame; cells of a row frame are its `blocks`. */
  rows?: string[][];
  colspan?: number;
  /** Raw text of a `pre`. */
  raw?: string[];
  lang?: string;
}

/** Inline text with HTML whitespace collapsing and emphasis marks that vanish when empty. */
class Inline {
  parts: string[] = [];
  private space = false;
  /** Bumped on every flush, so a mark opened before a block element cannot close after it. */
  generation = 0;
  private open: number[] = [];

  text(raw: string): void {
    let s = raw.replace(WHITESPACE, ' ');
    if (s.startsWith(' ')) {
      if (this.parts.length > 0) this.space = true;
      s = s.slice(1);
    }
    if (s === '') return;
    const trailing = s.endsWith(' ');
    if (trailing) s = s.slice(0, -1);
    if (this.space) this.parts.push(' ');
    this.parts.push(s);
    this.space = trailing;
  }

  lineBreak(): void {
    this.parts.push('\n');
    this.space = false;
  }

  /** Opens a mark; the space before it stays outside. Returns a handle for `closeMark`. */
  openMark(mark: string): { index: number; generation: number } {
    if (this.space && this.parts.length > 0) this.parts.push(' ');
    this.space = false;
    this.open.push(this.parts.length);
    this.parts.push(mark);
    return { index: this.parts.length - 1, generation: this.generation };
  }

  closeMark(handle: { index: number; generation: number }, mark: string): void {
    if (handle.generation !== this.generation) return;
    this.open = this.open.filter((i) => i !== handle.index);
    if (this.parts.length === handle.index + 1) this.parts.pop();
    else this.parts.push(mark);
  }

  /** The paragraph so far (marks never closed dropped), and a fresh start. */
  take(): string {
    for (const i of this.open) this.parts[i] = '';
    const out = this.parts.join('').trim();
    this.parts = [];
    this.open = [];
    this.space = false;
    this.generation++;
    return out;
  }
}

class Converter {
  private readonly frames: Frame[] = [frame('block', '#root')];
  /** Open elements whose content is dropped (scripts, navigation, ...). */
  private skipping = 0;
  /** Per open element, what its close must undo (a mark, a frame), in parse order. */
  private readonly closers: Array<(() => void) | undefined> = [];
  /** Open table cells, so a nested table flattens to text inside its cell. */
  private cells = 0;

  private get top(): Frame {
    return this.frames[this.frames.length - 1]!;
  }

  open(tag: string, attribs: Record<string, string>): void {
    if (this.skipping > 0 || SKIPPED.has(tag)) {
      this.skipping++;
      this.closers.push(() => {
        this.skipping--;
      });
      return;
    }
    if (this.top.kind === 'pre') {
      if (tag === 'br') this.top.raw?.push('\n');
      this.closers.push(undefined);
      return;
    }
    this.closers.push(this.opened(tag, attribs));
  }

  close(_tag: string): void {
    this.closers.pop()?.();
  }

  text(data: string): void {
    if (this.skipping > 0) return;
    const top = this.top;
    if (top.kind === 'pre') top.raw?.push(data);
    else if (top.kind === 'list' || top.kind === 'table' || top.kind === 'row') {
      // Stray text between rows or items: keep it as a paragraph of its own.
      if (data.trim() !== '') top.inline.text(data);
    } else top.inline.text(data);
  }

  finish(): string {
    while (this.closers.length > 0) this.close('');
    const root = this.frames[0]!;
    flushInline(root);
    return root.blocks.join('\n\n');
  }

  private opened(tag: string, attribs: Record<string, string>): (() => void) | undefined {
    const heading = HEADINGS[tag];
    if (heading !== undefined) return this.push(frame('heading', tag, { level: heading }));
    if (tag === 'br') {
      this.top.inline.lineBreak();
      return undefined;
    }
    if (tag === 'hr') {
      flushInline(this.top);
      this.top.blocks.push('---');
      return undefined;
    }
    if (tag === 'img' || tag === 'input' || tag === 'wbr') return undefined;
    if (BOLD.has(tag)) return this.mark('**');
    if (ITALIC.has(tag)) return this.mark('_');
    if (CODE.has(tag)) return this.mark('`');
    if (tag === 'pre') {
      const lang = /(?:^|\s)(?:language|lang)-([\w+#-]+)/.exec(attribs.class ?? '')?.[1];
      return this.push(frame('pre', tag, { raw: [], ...(lang ? { lang } : {}) }));
    }
    if (tag === 'blockquote') return this.push(frame('quote', tag));
    if (LISTS.has(tag)) {
      const start = Number.parseInt(attribs.start ?? '1', 10);
      return this.push(
        frame('list', tag, { ordered: tag === 'ol', start: Number.isFinite(start) ? start : 1 }),
      );
    }
    if (tag === 'li') return this.push(frame('item', tag));
    if (this.cells > 0 && (tag === 'table' || tag === 'tr' || CELLS.has(tag))) {
      // A table inside a cell reads as text: cells separated by spaces.
      this.top.inline.text(' ');
      return undefined;
    }
    if (tag === 'table') return this.push(frame('table', tag, { rows: [] }));
    if (tag === 'tr') return this.push(frame('row', tag));
    if (CELLS.has(tag)) {
      const span = Number.parseInt(attribs.colspan ?? '1', 10);
      this.cells++;
      const close = this.push(frame('cell', tag, { colspan: Number.isFinite(span) ? span : 1 }));
      return () => {
        this.cells--;
        close();
      };
    }
    if (BLOCKS.has(tag)) return this.push(frame('block', tag));
    return undefined;
  }

  private mark(mark: string): () => void {
    const inline = this.top.inline;
    const handle = inline.openMark(mark);
    return () => inline.closeMark(handle, mark);
  }

  /** Opens a block frame; the returned closer renders it into its parent. */
  private push(f: Frame): () => void {
    flushInline(this.top);
    this.frames.push(f);
    return () => {
      const i = this.frames.lastIndexOf(f);
      if (i < 1) return;
      // Frames opened inside and not closed (malformed nesting) close with it.
      while (this.frames.length - 1 > i) this.closeFrame(this.frames[this.frames.length - 1]!);
      this.closeFrame(f);
    };
  }

  private closeFrame(f: Frame): void {
    this.frames.pop();
    flushInline(f);
    const parent = this.top;
    const rendered = render(f);
    switch (f.kind) {
      case 'item':
        if (parent.kind === 'list') {
          if (rendered !== '') parent.blocks.push(rendered);
          return;
        }
        if (rendered !== '') parent.blocks.push(indentAfter('- ', rendered));
        return;
      case 'cell': {
        const row = parent.kind === 'row' ? parent : undefined;
        const cells = row ? row.blocks : parent.blocks;
        cells.push(rendered);
        for (let i = 1; row && i < Math.min(f.colspan ?? 1, 1000); i++) cells.push('');
        return;
      }
      case 'row': {
        const table = this.frames.findLast((x) => x.kind === 'table');
        if (f.blocks.length > 0 && table?.rows) table.rows.push(f.blocks);
        else if (f.blocks.length > 0) parent.blocks.push(f.blocks.join(' '));
        return;
      }
      default:
        if (rendered !== '') parent.blocks.push(rendered);
    }
  }
}

function frame(kind: FrameKind, tag: string, extra: Partial<Frame> = {}): Frame {
  return { kind, tag, blocks: [], inline: new Inline(), ...extra };
}

/** Ends the running paragraph of `f`; a line that would read as a heading is escaped. */
function flushInline(f: Frame): void {
  const text = f.inline.take();
  if (text === '') return;
  if (f.kind === 'row') f.blocks.push(text);
  else f.blocks.push(text.replace(/^(#{1,6})(?=\s|$)/gm, '\\$1'));
}

function render(f: Frame): string {
  switch (f.kind) {
    case 'heading': {
      const text = oneLine(f.blocks.join(' ')).replace(/^\\#/, '#');
      return text === '' ? '' : `${'#'.repeat(f.level ?? 1)} ${text}`;
    }
    case 'pre': {
      const body = (f.raw ?? []).join('').replace(/^\n/, '').replace(/\s+$/, '');
      if (body === '') return '';
      const fence = '`'.repeat(Math.max(3, longestRun(body, '`') + 1));
      return `${fence}${f.lang ?? ''}\n${body}\n${fence}`;
    }
    case 'quote': {
      const body = f.blocks.join('\n\n');
      return body === '' ? '' : body.replace(/^/gm, '> ').replace(/^> $/gm, '>');
    }
    case 'list': {
      let n = f.start ?? 1;
      return f.blocks.map((item) => indentAfter(f.ordered ? `${n++}. ` : '- ', item)).join('\n');
    }
    case 'item':
      return f.blocks.join('\n');
    case 'cell':
      return oneLine(f.blocks.join(' '));
    case 'table':
      return renderTable(f.rows ?? [], f.blocks);
    default:
      return f.blocks.join('\n\n');
  }
}

/** A GFM table; the caption (and stray text) goes above it. */
function renderTable(rows: string[][], around: string[]): string {
  const kept = rows.filter((r) => r.some((c) => c !== ''));
  const table = kept.length > 0 ? markdownTable(kept) : '';
  return [...around, table].filter((s) => s !== '').join('\n\n');
}

/** Prefixes the first line with `marker` and indents the others to line up under its text. */
function indentAfter(marker: string, text: string): string {
  const pad = ' '.repeat(marker.length);
  return marker + text.replace(/\n(?=[^\n])/g, `\n${pad}`);
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, ' ').trim();
}

function longestRun(s: string, ch: string): number {
  let best = 0;
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    run = s[i] === ch ? run + 1 : 0;
    if (run > best) best = run;
  }
  return best;
}
