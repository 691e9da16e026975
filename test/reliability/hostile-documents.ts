import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { crc32, createDeflateRaw, deflateRawSync } from 'node:zlib';

/*
 * Hostile (and long) documents made by the tests themselves: no binary fixtures. A small zip writer
 * gives full control over what the central directory claims (sizes, encryption flags), which real
 * bombs exploit and no archiving library lets one fake.
 */

interface ZipEntry {
  name: string;
  /** The entry's bytes, or chunks of them (a bomb streams hundreds of MB through deflate). */
  data: Uint8Array | { chunk: Uint8Array; times: number };
  /** Store instead of deflate. */
  stored?: boolean;
  /** What the headers claim the uncompressed size is (a lie, when set). */
  declaredSize?: number;
  /** Sets the "encrypted" flag (the data itself is left as is). */
  encrypted?: boolean;
}

/** Writes a zip file; entries with repeated chunks are deflated as a stream (memory stays small). */
export async function writeZip(path: string, entries: readonly ZipEntry[]): Promise<void> {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const { compressed, crc, size } = await pack(e);
    const name = Buffer.from(e.name, 'utf8');
    const flags = e.encrypted ? 1 : 0;
    const method = e.stored ? 0 : 8;
    const declared = e.declaredSize ?? size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(0, 10);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(declared, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0);
    cd.writeUInt16LE(20, 4);
    cd.writeUInt16LE(20, 6);
    cd.writeUInt16LE(flags, 8);
    cd.writeUInt16LE(method, 10);
    cd.writeUInt32LE(0, 12);
    cd.writeUInt32LE(crc, 16);
    cd.writeUInt32LE(compressed.length, 20);
    cd.writeUInt32LE(declared, 24);
    cd.writeUInt16LE(name.length, 28);
    cd.writeUInt32LE(offset, 42);
    central.push(cd, name);
    parts.push(local, name, compressed);
    offset += local.length + name.length + compressed.length;
  }
  const cdBytes = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cdBytes.length, 12);
  end.writeUInt32LE(offset, 16);
  await writeFile(path, Buffer.concat([...parts, cdBytes, end]));
}

async function pack(e: ZipEntry): Promise<{ compressed: Buffer; crc: number; size: number }> {
  if (e.data instanceof Uint8Array) {
    const compressed = e.stored ? Buffer.from(e.data) : deflateRawSync(e.data);
    return { compressed, crc: crc32(e.data), size: e.data.length };
  }
  const { chunk, times } = e.data;
  const deflate = createDeflateRaw({ level: 1 });
  const out: Buffer[] = [];
  deflate.on('data', (b: Buffer) => out.push(b));
  const done = new Promise<void>((resolve, reject) => {
    deflate.on('end', resolve);
    deflate.on('error', reject);
  });
  let crc = 0;
  for (let i = 0; i < times; i++) {
    crc = crc32(chunk, crc);
    if (!deflate.write(chunk)) await new Promise<void>((r) => deflate.once('drain', () => r()));
  }
  deflate.end();
  await done;
  return { compressed: Buffer.concat(out), crc, size: chunk.length * times };
}

const CONTENT_TYPES = (main: string, type: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/${main}" ContentType="${type}"/></Types>`;
const RELS = (main: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="${main}"/></Relationships>`;
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml';
const utf8 = (s: string) => Buffer.from(s, 'utf8');

/** A Word paragraph (optionally a heading style). */
export function wParagraph(text: string, style?: string): string {
  const pPr = style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : '';
  return `<w:p>${pPr}<w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
}

/** A DOCX whose body is `body` (WordprocessingML paragraphs). */
export function writeDocx(
  path: string,
  body: string | { chunk: string; times: number },
  prefix = '',
): Promise<void> {
  const head = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>${prefix}<w:document ${W}><w:body>`;
  const tail = '</w:body></w:document>';
  const document: ZipEntry['data'] =
    typeof body === 'string'
      ? utf8(head + body + tail)
      : // A bomb: the repeated chunk alone (the result need not be valid XML: it must never be parsed).
        { chunk: utf8(body.chunk), times: body.times };
  return writeZip(path, [
    { name: '[Content_Types].xml', data: utf8(CONTENT_TYPES('word/document.xml', DOCX_TYPE)) },
    { name: '_rels/.rels', data: utf8(RELS('word/document.xml')) },
    { name: 'word/document.xml', data: document },
  ]);
}

/** An XLSX whose only sheet is `sheet` bytes of repeated cells. */
export function writeXlsxBomb(path: string, mb: number): Promise<void> {
  const cell = '<row><c t="inlineStr"><is><t>0000000000000000</t></is></c></row>';
  const chunk = utf8(cell.repeat(Math.ceil((1024 * 1024) / cell.length)));
  return writeZip(path, [
    {
      name: '[Content_Types].xml',
      data: utf8(
        CONTENT_TYPES(
          'xl/workbook.xml',
          'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml',
        ),
      ),
    },
    { name: '_rels/.rels', data: utf8(RELS('xl/workbook.xml')) },
    {
      name: 'xl/workbook.xml',
      data: utf8(
        '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="S" sheetId="1"/></sheets></workbook>',
      ),
    },
    { name: 'xl/worksheets/sheet1.xml', data: { chunk, times: mb } },
  ]);
}

/**
 * A PDF of `pages` pages, each with one line of text; `nest` wraps the page tree that many levels
 * deep; `size` is the page size in points (US Letter, 612 × 792, by default).
 */
export async function writePdf(
  path: string,
  pages: number,
  opts: { nest?: number; encrypt?: boolean; size?: readonly [number, number] } = {},
) {
  const [width, height] = opts.size ?? [612, 792];
  const out = createWriteStream(path);
  let offset = 0;
  const offsets: number[] = [];
  const write = async (s: string) => {
    offset += Buffer.byteLength(s, 'latin1');
    if (!out.write(s, 'latin1')) await new Promise<void>((r) => out.once('drain', () => r()));
  };
  const obj = async (n: number, body: string) => {
    offsets[n] = offset;
    await write(`${n} 0 obj\n${body}\nendobj\n`);
  };
  await write('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n');
  const nest = opts.nest ?? 0;
  // 1 catalog, 2 font, 3..(3+nest) page-tree nodes, then per page: page + content.
  const tree = (level: number) => 3 + level;
  const firstPage = 3 + nest + 1;
  await obj(1, `<< /Type /Catalog /Pages ${tree(0)} 0 R >>`);
  await obj(2, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  for (let level = 0; level < nest; level++) {
    await obj(tree(level), `<< /Type /Pages /Kids [${tree(level + 1)} 0 R] /Count ${pages} >>`);
  }
  const kids = Array.from({ length: pages }, (_, i) => `${firstPage + 2 * i} 0 R`).join(' ');
  await obj(
    tree(nest),
    `<< /Type /Pages /Kids [${kids}] /Count ${pages} ${nest > 0 ? `/Parent ${tree(nest - 1)} 0 R` : ''} >>`,
  );
  for (let i = 0; i < pages; i++) {
    const page = firstPage + 2 * i;
    const stream = `BT /F1 12 Tf 72 ${height - 72} Td (Page ${i + 1} of a long hostile report.) Tj ET`;
    await obj(
      page,
      `<< /Type /Page /Parent ${tree(nest)} 0 R /MediaBox [0 0 ${width} ${height}] /Resources << /Font << /F1 2 0 R >> >> /Contents ${page + 1} 0 R >>`,
    );
    await obj(page + 1, `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  }
  const count = firstPage + 2 * pages;
  let encrypt = '';
  if (opts.encrypt) {
    offsets[count] = offset;
    // Standard security handler, revision 2, with an owner/user entry no empty password opens.
    const hex = 'ab'.repeat(32);
    await write(`${count} 0 obj\n<< /Filter /Standard /V 1 /R 2 /O <${hex}> /U <${hex}> /P -4 >>\nendobj\n`);
    encrypt = ` /Encrypt ${count} 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]`;
  }
  const size = opts.encrypt ? count + 1 : count;
  const xref = offset;
  await write(`xref\n0 ${size}\n0000000000 65535 f \n`);
  for (let n = 1; n < size; n++) await write(`${String(offsets[n] ?? 0).padStart(10, '0')} 00000 n \n`);
  await write(`trailer\n<< /Size ${size} /Root 1 0 R${encrypt} >>\nstartxref\n${xref}\n%%EOF\n`);
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
}

/** The classic billion-laughs entity declarations, as a DOCTYPE. */
export const ENTITY_BOMB_DOCTYPE = `<!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaa">${Array.from(
  { length: 9 },
  (_, i) => `<!ENTITY ${String.fromCharCode(98 + i)} "${`&${String.fromCharCode(97 + i)};`.repeat(10)}">`,
).join('')}]>`;
