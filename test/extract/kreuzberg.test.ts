import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createExtractor } from '../../src/extract/create-extractor.js';
import { kreuzbergError, startFakeKreuzberg } from '../fakes/kreuzberg.js';
import type { UploadServer } from '../fakes/upload-server.js';
import { closedPortUrl, DOCS, failure, settings, silent } from './helpers.js';

let server: UploadServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const pdf = { path: join(DOCS, 'multi_page.pdf'), filename: 'multi_page.pdf' };

describe('sidecar-http (Kreuzberg HTTP API)', () => {
  it('posts the file as multipart part `files` with its MIME type, plus config and bearer when set', async () => {
    server = await startFakeKreuzberg(() => ({
      status: 200,
      body: [
        { content: 'Hello world from the sidecar.', mime_type: 'application/pdf', metadata: {}, tables: [] },
      ],
    }));
    const extractor = createExtractor(
      'sidecar-http',
      settings({
        EXTRACTION_SIDECAR_URL: `${server.url}/`,
        EXTRACTION_SIDECAR_API_KEY: 'side-key',
        EXTRACTION_SIDECAR_CONFIG: '{"output_format":"markdown"}',
      }),
      { log: silent },
    );
    await extractor.extract(pdf);
    const [req] = server.requests;
    expect(req?.path).toBe('/extract');
    expect(req?.headers.authorization).toBe('Bearer side-key');
    expect(req?.files).toHaveLength(1);
    expect(req?.files[0]).toMatchObject({
      field: 'files',
      filename: 'multi_page.pdf',
      type: 'application/pdf',
    });
    expect(req?.files[0]?.bytes.equals(await readFile(pdf.path))).toBe(true);
    expect(req?.fields.config).toEqual(['{"output_format":"markdown"}']);
  });

  it('maps the answer: metadata, ISO 639-3 languages to 639-1, tables appended as Markdown, page spans', async () => {
    server = await startFakeKreuzberg(() => ({
      status: 200,
      body: [
        {
          content: 'ignored when pages are present',
          mime_type: 'application/pdf',
          metadata: {
            title: 'Borgerskab',
            subject: 'Indfødsret',
            authors: ['Ida Hansen', 'Ole Berg'],
            created_at: '2024-05-01T10:00:00Z',
            pages: { total_count: 2 },
            format_type: 'pdf',
          },
          tables: [
            {
              cells: [
                ['a', 'b'],
                ['1', '2'],
              ],
              markdown: '| a | b |\n| --- | --- |\n| 1 | 2 |',
              page_number: 2,
            },
          ],
          detected_languages: ['dan', 'eng'],
          pages: [
            { page_number: 1, content: 'Første side.', tables: [], images: [] },
            { page_number: 2, content: 'Anden side.', tables: [], images: [] },
          ],
        },
      ],
    }));
    const extractor = createExtractor('sidecar-http', settings({ EXTRACTION_SIDECAR_URL: server.url }), {
      log: silent,
    });
    const [doc] = await extractor.extract(pdf);
    expect(doc?.text).toBe('Første side.\n\nAnden side.\n\n| a | b |\n| --- | --- |\n| 1 | 2 |');
    expect(doc?.pages).toEqual([
      { page: 1, start: 0, end: 12 },
      { page: 2, start: 14, end: 25 },
    ]);
    expect(doc?.metadata).toEqual({
      title: 'Borgerskab',
      subject: 'Indfødsret',
      authors: ['Ida Hansen', 'Ole Berg'],
      created_at: '2024-05-01T10:00:00.000Z',
      page_count: 2,
      languages: ['da', 'en'],
      mime_type: 'application/pdf',
    });
  });

  it('does not duplicate a table the text already carries, and detects languages when none are reported', async () => {
    const table = '| a | b |\n| --- | --- |\n| 1 | 2 |';
    server = await startFakeKreuzberg(() => ({
      status: 200,
      body: [
        {
          content: `Intro text that is clearly written in the English language.\n\n${table}`,
          mime_type: 'application/pdf',
          metadata: { author: 'Solo Writer' },
          tables: [{ cells: [], markdown: table, page_number: 1 }],
          detected_languages: null,
        },
      ],
    }));
    const extractor = createExtractor('sidecar-http', settings({ EXTRACTION_SIDECAR_URL: server.url }), {
      log: silent,
    });
    const [doc] = await extractor.extract(pdf);
    expect(doc?.text.split('| a | b |')).toHaveLength(2);
    expect(doc?.metadata.authors).toEqual(['Solo Writer']);
    expect(doc?.metadata.languages).toEqual(['en']);
  });

  it('turns a Kreuzberg error body into EXTRACTION_FAILED with its message', async () => {
    server = await startFakeKreuzberg(() =>
      kreuzbergError(422, 'ParsingError', 'Parsing error: invalid PDF header'),
    );
    const extractor = createExtractor('sidecar-http', settings({ EXTRACTION_SIDECAR_URL: server.url }), {
      log: silent,
    });
    const err = await failure(extractor.extract(pdf));
    expect(err).toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 422,
      message: 'Parsing error: invalid PDF header',
    });
    server.setHandler((_req, res) => {
      res.statusCode = 500;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ error_type: 'Error', message: 'boom', traceback: null, status_code: 500 }));
    });
    expect(await failure(extractor.extract(pdf))).toMatchObject({ statusCode: 502, message: 'boom' });
  });

  it('fails the request (not the process) when the sidecar is unreachable or too slow', async () => {
    const down = createExtractor(
      'sidecar-http',
      settings({ EXTRACTION_SIDECAR_URL: await closedPortUrl() }),
      {
        log: silent,
      },
    );
    const err = await failure(down.extract(pdf));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 502 });
    expect(err.message).toBe('Extraction sidecar unreachable: ECONNREFUSED');

    server = await startFakeKreuzberg(() => ({ status: 200, body: [] }));
    server.setHandler(() => new Promise(() => undefined));
    const slow = createExtractor(
      'sidecar-http',
      settings({ EXTRACTION_SIDECAR_URL: server.url, EXTRACTION_TIMEOUT: '1' }),
      { log: silent },
    );
    expect(await failure(slow.extract(pdf))).toMatchObject({
      statusCode: 504,
      message: 'Extraction sidecar did not answer within 1 s',
    });
  });

  it('probes GET /health', async () => {
    server = await startFakeKreuzberg(() => ({ status: 200, body: [] }));
    const extractor = createExtractor('sidecar-http', settings({ EXTRACTION_SIDECAR_URL: server.url }), {
      log: silent,
    });
    await extractor.probe?.(AbortSignal.timeout(2000));
    expect(server.requests.at(-1)).toMatchObject({ method: 'GET', path: '/health' });
  });
});
