import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, type Harness, startIngest } from './helpers/harness.js';

/**
 * `PUT /process`, Open WebUI's external document loader. Each request is written on a socket byte for
 * byte as Open WebUI 0.12's `ExternalDocumentLoader.load` sends it through python-requests:
 * `requests.put(f'{url}/process', data=<bytes>, headers={'Content-Type': mime, 'Authorization':
 * f'Bearer {key}', 'X-Filename': quote(basename(file_path))})`, the file stored as `<uuid>_<name>`.
 */
const UUID = '0b6c7f3e-9f0a-4c55-8d0e-2f1f9a3e4b21';

interface Raw {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One HTTP/1.1 request as python-requests writes it, and the answer read to its end. */
function sendAsOpenWebUi(
  port: number,
  body: Buffer,
  headers: { contentType?: string; key?: string; filename?: string },
): Promise<Raw> {
  const lines = [
    'PUT /process HTTP/1.1',
    `Host: 127.0.0.1:${port}`,
    'User-Agent: python-requests/2.34.2',
    'Accept-Encoding: gzip, deflate',
    'Accept: */*',
    'Connection: close',
    ...(headers.contentType ? [`Content-Type: ${headers.contentType}`] : []),
    ...(headers.key ? [`Authorization: Bearer ${headers.key}`] : []),
    ...(headers.filename ? [`X-Filename: ${headers.filename}`] : []),
    `Content-Length: ${body.length}`,
  ];
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const hs = Object.fromEntries(
        headerLines.map((l) => [
          l.slice(0, l.indexOf(':')).toLowerCase(),
          l.slice(l.indexOf(':') + 1).trim(),
        ]),
      );
      let payload = rest.join('\r\n\r\n');
      if (hs['transfer-encoding'] === 'chunked') payload = unchunk(payload);
      resolve({ status: Number(statusLine.split(' ')[1]), headers: hs, body: payload });
    });
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    socket.write(body);
  });
}

function unchunk(s: string): string {
  let out = '';
  let rest = s;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, nl), 16);
    if (!size) return out;
    out += rest.slice(nl + 2, nl + 2 + size);
    rest = rest.slice(nl + 2 + size + 2);
  }
}

/** Python's `urllib.parse.quote` with its default safe characters ("/" and the unreserved ones). */
function pyQuote(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

describe('PUT /process (Open WebUI external document loader)', () => {
  let h: Harness;
  let port: number;
  beforeAll(async () => {
    h = await startIngest({ MAX_UPLOAD_BYTES: String(2 * 1024 * 1024) });
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    port = (h.app.server.address() as { port: number }).port;
  });
  afterAll(() => h.close());

  it('answers a PDF one document per page, page 0-based as pypdf gives it', async () => {
    const pdf = await readFile(join(FIXTURES, 'normal_4pages.pdf'));
    const rowsBefore = await h.index.count({});
    const res = await sendAsOpenWebUi(port, pdf, {
      contentType: 'application/pdf',
      key: 'test-key',
      filename: pyQuote(`${UUID}_normal 4pages.pdf`),
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const docs = JSON.parse(res.body) as Array<{ page_content: string; metadata: Record<string, unknown> }>;
    expect(docs.map((d) => d.metadata.page)).toEqual([0, 1, 2, 3]);
    expect(docs.map((d) => d.metadata.page_label)).toEqual(['1', '2', '3', '4']);
    for (const d of docs) {
      expect(d.metadata).toMatchObject({
        source: `${UUID}_normal 4pages.pdf`,
        total_pages: 4,
        mime_type: 'application/pdf',
        extraction_engine: 'inprocess',
      });
      // Scalars only: Open WebUI's vector databases store metadata values as they come.
      for (const v of Object.values(d.metadata)) expect(['string', 'number']).toContain(typeof v);
    }
    expect(docs.filter((d) => d.page_content.length > 0).length).toBeGreaterThanOrEqual(3);
    // Nothing is indexed: the loader only extracts.
    expect(await h.index.count({})).toBe(rowsBefore);
  });

  it('answers a DOCX as one document with the text of the whole file', async () => {
    const docx = await readFile(join(FIXTURES, 'unit_test_headers.docx'));
    const res = await sendAsOpenWebUi(port, docx, {
      contentType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      key: 'test-key',
      filename: pyQuote(`${UUID}_unit_test_headers.docx`),
    });
    expect(res.status).toBe(200);
    const docs = JSON.parse(res.body) as Array<{ page_content: string; metadata: Record<string, unknown> }>;
    expect(docs).toHaveLength(1);
    expect(docs[0]!.page_content).toContain('Section');
    expect(docs[0]!.metadata).toMatchObject({
      source: `${UUID}_unit_test_headers.docx`,
      mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
    expect(docs[0]!.metadata.page).toBeUndefined();
  });

  it('takes any Content-Type as the file, a text file and an unknown type named only by X-Filename', async () => {
    const text = Buffer.from('Kilde reads text files sent by Open WebUI.\n\nSecond paragraph: æøå.\n');
    const plain = await sendAsOpenWebUi(port, text, {
      contentType: 'text/plain',
      key: 'test-key',
      filename: pyQuote(`${UUID}_notes æøå.txt`),
    });
    expect(plain.status).toBe(200);
    const docs = JSON.parse(plain.body) as Array<{ page_content: string; metadata: Record<string, unknown> }>;
    expect(docs).toEqual([
      {
        page_content: 'Kilde reads text files sent by Open WebUI.\n\nSecond paragraph: æøå.',
        metadata: expect.objectContaining({ source: `${UUID}_notes æøå.txt` }),
      },
    ]);
    // Open WebUI sends no Content-Type when it knows no MIME type.
    const untyped = await sendAsOpenWebUi(port, text, { key: 'test-key', filename: 'notes.md' });
    expect(untyped.status).toBe(200);
    // A JSON file is a file too, never parsed as a request body.
    const json = await sendAsOpenWebUi(port, Buffer.from('{"title": "a JSON file"}'), {
      contentType: 'application/json',
      key: 'test-key',
      filename: 'data.json',
    });
    expect(json.status).not.toBe(415);
  });

  it('answers 422 "No extractable text" for a file without text, 401 without the key, 413 over MAX_UPLOAD_BYTES', async () => {
    const empty = await sendAsOpenWebUi(port, Buffer.from(' \n\n '), {
      contentType: 'text/plain',
      key: 'test-key',
      filename: 'blank.txt',
    });
    expect(empty.status).toBe(422);
    expect(JSON.parse(empty.body)).toMatchObject({ status: false, code: 'EXTRACTION_FAILED' });
    expect(JSON.parse(empty.body).error).toContain('No extractable text');

    const pdf = await readFile(join(FIXTURES, 'multi_page.pdf'));
    const noKey = await sendAsOpenWebUi(port, pdf, { contentType: 'application/pdf', filename: 'a.pdf' });
    expect(noKey.status).toBe(401);
    const wrongKey = await sendAsOpenWebUi(port, pdf, {
      contentType: 'application/pdf',
      key: 'not-the-key',
      filename: 'a.pdf',
    });
    expect(wrongKey.status).toBe(401);
    expect(JSON.parse(wrongKey.body)).toEqual({ detail: 'Invalid API key' });

    const big = await sendAsOpenWebUi(port, Buffer.alloc(2 * 1024 * 1024 + 1, 0x61), {
      contentType: 'text/plain',
      key: 'test-key',
      filename: 'big.txt',
    });
    expect(big.status).toBe(413);
  });
});
