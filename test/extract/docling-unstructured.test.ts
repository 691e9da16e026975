import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createExtractor } from '../../src/extract/create-extractor.js';
import { DOCLING_PAGE_BREAK } from '../../src/extract/docling-engine.js';
import { doclingAnswer, startFakeDocling } from '../fakes/docling.js';
import { startFakeUnstructured, unstructuredElement } from '../fakes/unstructured.js';
import type { UploadServer } from '../fakes/upload-server.js';
import { closedPortUrl, DOCS, failure, settings, silent } from './helpers.js';

let server: UploadServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const pdf = { path: join(DOCS, 'multi_page.pdf'), filename: 'multi_page.pdf' };

describe('doc-layout (Docling Serve)', () => {
  it('posts `files` with Markdown output options and splits the answer into pages', async () => {
    server = await startFakeDocling((up) => ({
      status: 200,
      body: doclingAnswer(
        up.files[0]?.filename ?? '',
        `## The Evolution of the Word Processor\n\nFirst page text.\n\n<!-- image -->\n\n${DOCLING_PAGE_BREAK}\n\n## The Modern Era\n\n| a | b |\n|---|---|\n| 1 | 2 |`,
      ),
    }));
    const extractor = createExtractor(
      'doc-layout',
      settings({ DOCLING_SERVE_URL: server.url, DOCLING_SERVE_API_KEY: 'dk' }),
      { log: silent },
    );
    const [doc] = await extractor.extract(pdf);
    const [req] = server.requests;
    expect(req?.path).toBe('/v1/convert/file');
    expect(req?.headers['x-api-key']).toBe('dk');
    expect(req?.files[0]).toMatchObject({
      field: 'files',
      filename: 'multi_page.pdf',
      type: 'application/pdf',
    });
    expect(req?.fields).toMatchObject({
      to_formats: ['md'],
      image_export_mode: ['placeholder'],
      md_page_break_placeholder: [DOCLING_PAGE_BREAK],
    });
    expect(doc?.text).not.toContain('<!--');
    expect(doc?.pages).toHaveLength(2);
    const page2 = doc?.text.slice(doc.pages?.[1]?.start, doc.pages?.[1]?.end);
    expect(page2).toMatch(/^## The Modern Era/);
    expect(doc?.metadata).toMatchObject({ page_count: 2, languages: ['en'], mime_type: 'application/pdf' });
  });

  it('fails with the converter error, an HTTP error detail, or an unreachable server', async () => {
    server = await startFakeDocling(() => ({
      status: 200,
      body: doclingAnswer('x.pdf', '', 'failure', [
        {
          component_type: 'document_backend',
          module_name: 'pdf',
          error_message: 'Input document is not valid.',
        },
      ]),
    }));
    const extractor = createExtractor('doc-layout', settings({ DOCLING_SERVE_URL: server.url }), {
      log: silent,
    });
    expect(await failure(extractor.extract(pdf))).toMatchObject({
      code: 'EXTRACTION_FAILED',
      message: 'Docling Serve: Input document is not valid.',
    });
    server.setHandler((_r, res) => {
      res.statusCode = 415;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ detail: 'Unsupported format' }));
    });
    expect(await failure(extractor.extract(pdf))).toMatchObject({
      statusCode: 422,
      message: 'Docling Serve: Unsupported format',
    });
    const down = createExtractor('doc-layout', settings({ DOCLING_SERVE_URL: await closedPortUrl() }), {
      log: silent,
    });
    expect(await failure(down.extract(pdf))).toMatchObject({
      statusCode: 502,
      message: 'Docling Serve unreachable: ECONNREFUSED',
    });
  });
});

describe('doc-generic (Unstructured API)', () => {
  it('posts `files` with the strategy and renders elements as Markdown per page', async () => {
    server = await startFakeUnstructured(() => ({
      status: 200,
      body: [
        unstructuredElement('Header', 'Running header', { page_number: 1 }),
        unstructuredElement('Title', 'Indfødsret', { page_number: 1, languages: ['dan'], category_depth: 0 }),
        unstructuredElement('NarrativeText', 'Danske statsborgere har ret til at stemme.', {
          page_number: 1,
          languages: ['dan'],
        }),
        unstructuredElement('ListItem', 'Folketinget', { page_number: 1, languages: ['dan'] }),
        unstructuredElement('Title', 'Valg', { page_number: 2, languages: ['dan'], category_depth: 1 }),
        unstructuredElement('Table', 'a b 1 2', {
          page_number: 2,
          languages: ['eng'],
          text_as_html: '<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>',
        }),
        unstructuredElement('PageNumber', '2', { page_number: 2 }),
      ],
    }));
    const extractor = createExtractor(
      'doc-generic',
      settings({
        UNSTRUCTURED_API_URL: server.url,
        UNSTRUCTURED_API_KEY: 'uk',
        UNSTRUCTURED_STRATEGY: 'hi_res',
      }),
      { log: silent },
    );
    const [doc] = await extractor.extract(pdf);
    const [req] = server.requests;
    expect(req?.path).toBe('/general/v0/general');
    expect(req?.headers['unstructured-api-key']).toBe('uk');
    expect(req?.fields.strategy).toEqual(['hi_res']);
    expect(req?.files[0]).toMatchObject({ field: 'files', type: 'application/pdf' });
    expect(doc?.text).toBe(
      '# Indfødsret\n\nDanske statsborgere har ret til at stemme.\n\n- Folketinget\n\n## Valg\n\n| a | b |\n| --- | --- |\n| 1 | 2 |',
    );
    expect(doc?.pages?.map((p) => p.page)).toEqual([1, 2]);
    expect(doc?.metadata.languages).toEqual(['da', 'en']);
  });

  it('fails with the API detail or when unreachable', async () => {
    server = await startFakeUnstructured(() => ({
      status: 422,
      body: { detail: 'File type None is not supported.' },
    }));
    const extractor = createExtractor('doc-generic', settings({ UNSTRUCTURED_API_URL: server.url }), {
      log: silent,
    });
    expect(await failure(extractor.extract(pdf))).toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 422,
      message: 'Unstructured API: File type None is not supported.',
    });
    const down = createExtractor('doc-generic', settings({ UNSTRUCTURED_API_URL: await closedPortUrl() }), {
      log: silent,
    });
    expect(await failure(down.extract(pdf))).toMatchObject({ statusCode: 502 });
  });
});
