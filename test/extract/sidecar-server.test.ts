import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractorServiceSchema } from '../../src/config/extraction.js';
import { createExtractor } from '../../src/extract/create-extractor.js';
import { createInprocessExtractor } from '../../src/extract/inprocess-engine.js';
import { createExtractorPart } from '../../src/extract/sidecar-server.js';
import type { KildeApp } from '../../src/http/app.js';
import { testApp, testConfig } from '../helpers/app.js';
import { DOCS, failure, settings, silent } from './helpers.js';

let app: KildeApp;
let url: string;
beforeAll(async () => {
  const config = testConfig(extractorServiceSchema, {});
  ({ app } = await testApp(config, [createExtractorPart(config)]));
  url = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await app.close();
});

const client = () =>
  createExtractor(
    'sidecar-http',
    settings({ EXTRACTION_SIDECAR_URL: url, EXTRACTION_SIDECAR_API_KEY: 'test-key' }),
    {
      log: silent,
    },
  );

describe('kilde serve extractor (Kreuzberg-compatible POST /extract)', () => {
  it('gives sidecar-http the same documents as the inprocess engine, pages and tables included', async () => {
    for (const name of ['powerpoint_sample.pptx', 'unit_test_headers.docx', 'multi_page.pdf']) {
      const file = { path: join(DOCS, name), filename: name };
      const [remote] = await client().extract(file);
      const [local] = await createInprocessExtractor().extract(file);
      expect(remote).toEqual(local);
    }
  });

  it('answers in Kreuzberg shape: ISO 639-3 languages and tables with cells and page numbers', async () => {
    const form = new FormData();
    const bytes = await import('node:fs/promises').then((fs) =>
      fs.readFile(join(DOCS, 'powerpoint_sample.pptx')),
    );
    form.append('files', new Blob([bytes]), 'powerpoint_sample.pptx');
    form.append('config', '{}');
    const res = await fetch(`${url}/extract`, {
      method: 'POST',
      body: form,
      headers: { authorization: 'Bearer test-key' },
    });
    expect(res.status).toBe(200);
    const [result] = (await res.json()) as Record<string, unknown>[];
    expect(result).toMatchObject({
      mime_type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
      detected_languages: ['eng'],
      metadata: { authors: ['Maxim Lysak'], page_count: 3, language: 'en' },
    });
    const tables = result?.tables as { cells: string[][]; page_number: number }[];
    expect(tables[0]?.page_number).toBe(1);
    expect(tables[0]?.cells[2]?.slice(0, 3)).toEqual(['R1', 'True', 'False']);
  });

  it('requires the bearer key', async () => {
    const form = new FormData();
    form.append('files', new Blob(['hello']), 'a.txt');
    const res = await fetch(`${url}/extract`, { method: 'POST', body: form });
    expect(res.status).toBe(401);
  });

  it('reports errors in Kreuzberg shape, which sidecar-http turns into EXTRACTION_FAILED', async () => {
    const png = join(tmpdir(), `kilde-${process.pid}.png`);
    await writeFile(png, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]));
    const err = await failure(client().extract({ path: png, filename: 'photo.png' }));
    expect(err).toMatchObject({
      code: 'EXTRACTION_FAILED',
      statusCode: 422,
      message: 'Unsupported file type: image/png',
    });

    const empty = await fetch(`${url}/extract`, {
      method: 'POST',
      body: new FormData(),
      headers: { authorization: 'Bearer test-key' },
    });
    const form = new FormData();
    form.append('config', '{not json');
    form.append('files', new Blob(['hello']), 'a.txt');
    const badConfig = await fetch(`${url}/extract`, {
      method: 'POST',
      body: form,
      headers: { authorization: 'Bearer test-key' },
    });
    expect(badConfig.status).toBe(400);
    expect(await badConfig.json()).toMatchObject({
      error_type: 'ValidationError',
      status_code: 400,
      traceback: null,
    });
    expect(empty.status).toBe(400);
    expect(await empty.json()).toMatchObject({ error_type: 'ValidationError' });
  });
});
