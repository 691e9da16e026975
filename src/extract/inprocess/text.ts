import { readFile } from 'node:fs/promises';
import { markdownTable } from '../markdown-table.js';
import type { ReadContent } from './content.js';

/** UTF-8 (BOM stripped) when valid, else Windows-1252, the usual encoding of legacy text exports. */
export function decodeText(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return new TextDecoder('windows-1252').decode(bytes);
  }
}

/** Markdown and plain text pass through as they are (line endings normalised). */
export async function readPlain(path: string): Promise<ReadContent> {
  return plainContent(await readFile(path));
}

/** `readPlain` of a file's bytes already read. */
export function plainContent(bytes: Uint8Array): ReadContent {
  const text = decodeText(bytes).replace(/\r\n?/g, '\n').trim();
  const title = /^#\s+(.+)$/m.exec(text)?.[1]?.trim();
  return { text, metadata: title ? { title } : {} };
}

/** CSV/TSV become one Markdown table so the header stays attached to its rows. */
export async function readDelimited(path: string, delimiter: ',' | '\t'): Promise<ReadContent> {
  const rows = parseDelimited(decodeText(await readFile(path)), delimiter);
  return { text: markdownTable(rows), metadata: {} };
}

/** RFC 4180: quoted fields may hold delimiters, doubled quotes and line breaks. */
export function parseDelimited(input: string, delimiter: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (quoted) {
      if (c === '"' && input[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === delimiter) {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && input[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => r.some((f) => f.trim() !== ''));
}
