import { readFile } from 'node:fs/promises';
import { generate, type OfficeContentNode, type OfficeParserAST, parseOffice } from 'officeparser';
import { toIsoDate } from '../dates.js';
import type { FileKind } from '../file-type.js';
import { readCoreProperties, splitAuthors } from '../ooxml-core.js';
import { joinPages, type ReadContent, tidyMarkdown } from './content.js';

const MD_CONFIG = {
  generateIds: false,
  includeFormatting: false,
  includeImages: false,
  mdConfig: { fallbackToHtml: false, dialect: 'github' as const },
};

/**
 * PPTX/XLSX/ODF/RTF/EPUB via officeparser's AST. Each slide or sheet is rendered on its own so
 * slides become pages (with spans) and sheets get a `## name` heading above their Markdown table.
 */
export async function readOffice(path: string, kind: FileKind): Promise<ReadContent> {
  const buffer = await readFile(path);
  const ast = await parseOffice(buffer, { ocr: false, extractAttachments: false, ignoreNotes: false });
  const metadata = {
    ...officeMetadata(ast),
    ...(isOoxml(kind) ? readCoreProperties(new Uint8Array(buffer)) : {}),
  };
  const slides = ast.content.filter((n) => n.type === 'slide');
  if (slides.length > 0) {
    const texts = await Promise.all(slides.map((n) => render(ast, [n])));
    const { text, pages } = joinPages(texts);
    return { text, pages, metadata: { ...metadata, page_count: slides.length } };
  }
  const sheets = ast.content.filter((n) => n.type === 'sheet');
  if (sheets.length > 0) {
    const names = sheets.map((n, i) => sheetName(n) ?? `Sheet ${i + 1}`);
    const parts = await Promise.all(
      sheets.map(async (n, i) => `## ${names[i]}\n\n${await render(ast, [n])}`),
    );
    return { text: tidyMarkdown(parts.join('\n\n')), metadata: { ...metadata, sheet_names: names } };
  }
  return { text: await render(ast, ast.content), metadata };
}

async function render(ast: OfficeParserAST, content: OfficeContentNode[]): Promise<string> {
  const { value } = await generate({ ...ast, content }, 'md', MD_CONFIG);
  return tidyMarkdown(stripFrontMatter(String(value)));
}

/** The generator always writes YAML front matter and a leading rule per slide/sheet; both are noise here. */
function stripFrontMatter(md: string): string {
  return md.replace(/^\s*---\n[\s\S]*?\n---\n/, '').replace(/^(\s*---\s*\n)+/, '');
}

function sheetName(node: OfficeContentNode): string | undefined {
  const meta = node.metadata as { sheetName?: unknown } | undefined;
  return typeof meta?.sheetName === 'string' && meta.sheetName.trim() !== ''
    ? meta.sheetName.trim()
    : undefined;
}

function isOoxml(kind: FileKind) {
  return kind === 'docx' || kind === 'pptx' || kind === 'xlsx';
}

function officeMetadata(ast: OfficeParserAST): ReadContent['metadata'] {
  const m = ast.metadata as { title?: unknown; subject?: unknown; author?: unknown; created?: unknown };
  const out: ReadContent['metadata'] = {};
  if (typeof m.title === 'string' && m.title.trim()) out.title = m.title.trim();
  if (typeof m.subject === 'string' && m.subject.trim()) out.subject = m.subject.trim();
  if (typeof m.author === 'string' && m.author.trim()) out.authors = splitAuthors(m.author);
  const created = toIsoDate(m.created);
  if (created) out.created_at = created;
  return out;
}
