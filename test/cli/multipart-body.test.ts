import { Readable } from 'node:stream';
import { Busboy } from '@fastify/busboy';
import { describe, expect, it } from 'vitest';
import { type FormPart, multipartBody } from '../../src/cli/multipart-body.js';

/**
 * The one-buffer body `kilde ingest --url` sends its job batches of small files in: the server's
 * multipart parser (busboy, as @fastify/multipart runs it) reads from it exactly what it reads from
 * the body `fetch` makes of the same `FormData`: field values, file names (quotes, line breaks,
 * non-ASCII), and file bytes that contain CRLF and dashes.
 */
type Parsed = Array<{ name: string; value?: string; filename?: string; type?: string; bytes?: string }>;

function parse(body: Uint8Array, contentType: string): Promise<Parsed> {
  return new Promise((resolve, reject) => {
    const out: Parsed = [];
    const bb = new Busboy({ headers: { 'content-type': contentType } });
    bb.on('field', (name: string, value: string) => out.push({ name, value }));
    bb.on('file', (name: string, stream: Readable, filename: string, _enc: string, type: string) => {
      const chunks: Buffer[] = [];
      const part: Parsed[number] = { name, filename, type };
      out.push(part);
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        part.bytes = Buffer.concat(chunks).toString('base64');
      });
    });
    bb.on('finish', () => resolve(out));
    bb.on('error', reject);
    Readable.from([Buffer.from(body)]).pipe(bb);
  });
}

const PARTS: FormPart[] = [
  { name: 'collection_name', value: 'notes' },
  { name: 'user_id', value: 'line one\nline two\r\nthree' },
  { name: 'files', value: JSON.stringify([{ file_id: 'a' }, { file_id: 'b' }, { file_id: 'c' }]) },
  {
    name: 'file',
    filename: 'heron "grey".txt',
    data: Buffer.from('The grey heron.\r\n--not a boundary\r\n'),
  },
  { name: 'file', filename: 'ærø\nsund.md', data: Buffer.from('# Ærø\n\nFærgen sejler.\n') },
  { name: 'file', filename: 'empty.txt', data: new Uint8Array(0) },
  { name: 'file', filename: 'bytes.bin', data: Uint8Array.from({ length: 300 }, (_, i) => (i * 7) % 256) },
];

describe('multipartBody', () => {
  it('parses on the server exactly as the FormData fetch would send', async () => {
    const form = new FormData();
    for (const p of PARTS) {
      if ('data' in p) form.append(p.name, new Blob([p.data]), p.filename);
      else form.append(p.name, p.value);
    }
    const reference = new Response(form);
    const expected = await parse(
      new Uint8Array(await reference.arrayBuffer()),
      reference.headers.get('content-type') ?? '',
    );
    const { body, contentType } = multipartBody(PARTS);
    expect(contentType).toMatch(/^multipart\/form-data; boundary=/);
    const got = await parse(body, contentType);
    expect(got).toEqual(expected);
    expect(got.filter((p) => p.filename).map((p) => p.filename)).toEqual([
      'heron %22grey%22.txt',
      'ærø%0Asund.md',
      'empty.txt',
      'bytes.bin',
    ]);
    expect(got.find((p) => p.name === 'user_id')?.value).toBe('line one\r\nline two\r\nthree');
    expect(Buffer.from(got[3]!.bytes!, 'base64').toString()).toBe('The grey heron.\r\n--not a boundary\r\n');
  });

  it('draws a new boundary for each body', () => {
    const a = multipartBody(PARTS).contentType;
    const b = multipartBody(PARTS).contentType;
    expect(a).not.toBe(b);
  });
});
