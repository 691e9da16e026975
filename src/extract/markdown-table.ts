/** Renders rows as a GFM table; the first row is the header. Pipes and line breaks are escaped. */
export function markdownTable(rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '';
  // A loop, not Math.max(...): a spread of half a million rows overflows the call stack.
  let width = 0;
  for (const r of rows) if (r.length > width) width = r.length;
  const cell = (s: string | undefined) => (s ?? '').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ').trim();
  const line = (r: readonly string[]) =>
    `| ${Array.from({ length: width }, (_, i) => cell(r[i])).join(' | ')} |`;
  const [header = [], ...body] = rows;
  return [
    line(header),
    `| ${Array.from({ length: width }, () => '---').join(' | ')} |`,
    ...body.map(line),
  ].join('\n');
}

export interface MarkdownTable {
  cells: string[][];
  markdown: string;
  /** Character offset of the table in the text. */
  start: number;
}

const ROW = /^\s*\|.*\|\s*$/;
const SEPARATOR = /^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$/;

/** Finds the GFM tables in a Markdown text (header row, separator row, body rows). */
export function findMarkdownTables(text: string): MarkdownTable[] {
  const lines = text.split('\n');
  const tables: MarkdownTable[] = [];
  let offset = 0;
  const offsets = lines.map((l) => {
    const o = offset;
    offset += l.length + 1;
    return o;
  });
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!ROW.test(lines[i] ?? '') || !SEPARATOR.test(lines[i + 1] ?? '')) continue;
    let end = i + 2;
    while (end < lines.length && ROW.test(lines[end] ?? '')) end++;
    const block = lines.slice(i, end);
    const cells = [block[0] ?? '', ...block.slice(2)].map(splitRow);
    tables.push({ cells, markdown: block.join('\n'), start: offsets[i] ?? 0 });
    i = end - 1;
  }
  return tables;
}

function splitRow(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  return inner.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
}
