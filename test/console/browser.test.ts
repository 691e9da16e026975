import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fileIdFor } from '../../src/index/identifiers.js';
import { hasChromium, launchChromium, NO_CHROMIUM } from '../helpers/browser.js';
import { KEY, startKilde } from './kilde.js';

/**
 * The web console in a real browser (Debian's Chromium driven by playwright-core) against a real
 * `kilde serve all`: LanceDB in a temporary directory, real extraction, the real HTTP API. Nothing
 * is mocked.
 */
const kilde = await startKilde();
afterAll(() => kilde.close());

describe.skipIf(!hasChromium)(
  `web console in Chromium${hasChromium ? '' : ` [skipped: ${NO_CHROMIUM}]`}`,
  () => {
    let browser: Browser;
    let context: BrowserContext;
    let page: Page;
    const pageErrors: string[] = [];

    beforeAll(async () => {
      browser = await launchChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });
    const open = async (viewport = { width: 1280, height: 800 }) => {
      context = await browser.newContext({ viewport });
      page = await context.newPage();
      page.setDefaultTimeout(20_000);
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      // The CSP is strict (no inline script or style, nothing from elsewhere): the console must not trip it.
      page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) pageErrors.push(m.text());
      });
      await page.goto(`${kilde.url}/`);
      return page;
    };
    afterEach(async () => {
      await context?.close();
      // An uncaught exception in the console is a failure whatever the test checked.
      expect(pageErrors.splice(0)).toEqual([]);
    });

    const signIn = async (key = KEY) => {
      await page.getByLabel('API key').fill(key);
      await page.getByLabel('API key').press('Enter');
    };

    it('is served at / with its security headers, and the page loads without errors', async () => {
      const p = await open();
      const res = await p.goto(`${kilde.url}/`);
      expect(res?.status()).toBe(200);
      expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
      await expect(p.getByRole('heading', { name: 'Kilde console' }).isVisible()).resolves.toBe(true);
    });

    it('signs in by keyboard; the key is kept in sessionStorage only and sent as the bearer header', async () => {
      const p = await open();
      // The key field has focus on arrival: type and press Enter.
      await p.locator('#api-key:focus').waitFor();
      await p.keyboard.type(KEY);
      const call = p.waitForRequest((r) => r.url().endsWith('/api/v1/collections'));
      await p.keyboard.press('Enter');
      expect((await call).headers().authorization).toBe(`Bearer ${KEY}`);
      await p.getByRole('heading', { name: 'Collections' }).waitFor();
      expect(await p.evaluate(() => sessionStorage.getItem('kilde.apiKey'))).toBe(KEY);
      expect(await p.evaluate(() => localStorage.length)).toBe(0);
      expect(await context.cookies()).toEqual([]);
      // A reload in the same tab stays signed in; the key never appears in the address.
      await p.reload();
      await p.getByRole('heading', { name: 'Collections' }).waitFor();
      expect(p.url()).not.toContain(KEY);
    });

    it('a wrong key gets a clear message and is not stored', async () => {
      const p = await open();
      await signIn('not-the-key');
      const alert = p.getByRole('alert');
      await alert.waitFor();
      expect(await alert.textContent()).toContain('Wrong API key');
      expect(await p.evaluate(() => sessionStorage.getItem('kilde.apiKey'))).toBeNull();
      await expect(p.getByLabel('API key').isVisible()).resolves.toBe(true);
    });

    it('uploads a PDF and a DOCX, follows each through its stages to done, and the chunks are in the index', async () => {
      const p = await open();
      await signIn();
      await p
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Upload', exact: true })
        .click();
      await p.getByLabel('Collection').fill('console-upload');
      await p
        .getByLabel('Choose files')
        .setInputFiles([`${FIXTURES_DIR}/multi_page.pdf`, `${FIXTURES_DIR}/unit_test_headers.docx`]);
      // Reading another screen meanwhile does not stop them.
      const nav = p.getByRole('navigation', { name: 'Main' });
      await nav.getByRole('link', { name: 'Collections', exact: true }).click();
      await p.getByRole('heading', { name: 'Collections' }).waitFor();
      await nav.getByRole('link', { name: 'Upload', exact: true }).click();
      for (const file of ['multi_page.pdf', 'unit_test_headers.docx']) {
        const row = p.locator(`li.upload[data-file="${file}"]`);
        await row.and(p.locator('[data-state="done"]')).waitFor({ timeout: 60_000 });
        // Every stage the server runs is marked passed; with no embedder (lexical-only, the
        // embedded default) embed is marked skipped, not passed. The count the row links to is the
        // index's, under the file_id its collection and name give.
        expect(await row.locator('.stage.skipped[data-stage="embed"]').count()).toBe(1);
        expect(await row.locator('.stage.done[data-stage="embed"]').count()).toBe(0);
        expect(await row.locator('.stage.done').count()).toBe(5);
        const { body } = await kilde.api<{ stats: { total_chunks: number } }>(
          'GET',
          `/api/v1/documents/${fileIdFor('console-upload', file)}/chunks?limit=1`,
        );
        expect(body.stats.total_chunks).toBeGreaterThan(0);
        expect(await row.getByRole('link').textContent()).toBe(`${body.stats.total_chunks} chunks`);
      }
    }, 90_000);

    it('a file dropped on the drop zone is uploaded like a picked one', async () => {
      const p = await open();
      await signIn();
      await p.goto(`${kilde.url}/#/upload?collection=console-drop`);
      const bytes = (await readFile(join(FIXTURES_DIR, 'word_tables.docx'))).toString('base64');
      // What a browser hands the page when a file is dropped: a DataTransfer holding the File.
      const drop = await p.evaluateHandle((b64) => {
        // Runs in the page; the test project has no DOM types, so the two classes are named here.
        const page = globalThis as unknown as {
          DataTransfer: new () => { items: { add(file: unknown): void } };
          File: new (parts: Uint8Array[], name: string) => unknown;
        };
        const data = new page.DataTransfer();
        data.items.add(new page.File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'dropped.docx'));
        return data;
      }, bytes);
      const zone = p.getByRole('region', { name: /Drop zone/ });
      await zone.dispatchEvent('dragover', { dataTransfer: drop });
      await zone.dispatchEvent('drop', { dataTransfer: drop });
      await p.locator('li.upload[data-file="dropped.docx"][data-state="done"]').waitFor({ timeout: 60_000 });
      const { body } = await kilde.api<{ stats: { total_chunks: number; collection_name: string } }>(
        'GET',
        `/api/v1/documents/${fileIdFor('console-drop', 'dropped.docx')}/chunks?limit=1`,
      );
      expect(body.stats).toMatchObject({ collection_name: 'console-drop' });
      expect(body.stats.total_chunks).toBeGreaterThan(0);
    });

    it('a file that cannot be converted shows the stage it failed in, its error code and message', async () => {
      const p = await open();
      await signIn();
      await p.goto(`${kilde.url}/#/upload?collection=console-upload`);
      await p.getByLabel('Choose files').setInputFiles({
        name: 'broken.pdf',
        mimeType: 'application/pdf',
        buffer: Buffer.from('%PDF-1.7\nthis is not a PDF body\n%%EOF\n'),
      });
      const row = p.locator('li.upload[data-file="broken.pdf"]');
      await row.and(p.locator('[data-state="failed"]')).waitFor({ timeout: 60_000 });
      // What the row shows is the job's own error, as the jobs API reports it.
      const { body } = await kilde.api<{
        jobs: { file_id: string; error: { code: string; message: string; stage?: string } | null }[];
      }>('GET', '/api/v1/jobs?limit=50');
      const job = body.jobs.find((j) => j.file_id === fileIdFor('console-upload', 'broken.pdf'));
      expect(job?.error?.code).toMatch(/^[A-Z_]+$/);
      // The job says where it failed: in extraction (`convert` on the wire).
      expect(job?.error?.stage).toBe('convert');
      const shown = await row.getByRole('alert').textContent();
      expect(shown).toContain('Failed at extract');
      expect(shown).toContain(job?.error?.code);
      expect(shown).toContain(job?.error?.message);
      // That stage is the one marked failed; the ones before it passed, none after it ran.
      expect(await row.locator('.stage.failed').getAttribute('data-stage')).toBe('convert');
      expect(await row.locator('.stage.done').count()).toBe(1);
    });

    it("opens a document's chunks in reading order: text, breadcrumb, page, offsets, engine", async () => {
      await kilde.ingest('unit_test_headers.docx', 'read/headers.docx', 'console-read');
      await kilde.ingest('multi_page.pdf', 'read/multi_page.pdf', 'console-read');
      const p = await open();
      await signIn();
      await p.getByRole('link', { name: 'console-read' }).click();
      await p.getByRole('link', { name: 'unit_test_headers.docx' }).click();
      const { body } = await kilde.api<{
        stats: { total_chunks: number };
        chunks: {
          split_id: number;
          content: string;
          meta: { headers?: string[]; char_start: number; char_end: number };
        }[];
      }>(
        'GET',
        `/api/v1/documents/${encodeURIComponent('read/headers.docx')}/chunks?limit=1000&include_content=full`,
      );
      const cards = p.locator('li.chunk');
      await cards.first().waitFor();
      expect(await cards.count()).toBe(body.stats.total_chunks);
      const ordered = [...body.chunks].sort((a, b) => a.split_id - b.split_id);
      for (const [i, chunk] of ordered.entries()) {
        const card = cards.nth(i);
        expect(await card.locator('.chip').textContent()).toBe(`#${chunk.split_id}`);
        expect(await card.locator('.chunk-text').textContent()).toBe(chunk.content);
        expect(await card.locator('.chunk-meta').textContent()).toContain(
          `chars ${chunk.meta.char_start}–${chunk.meta.char_end}`,
        );
        if (chunk.meta.headers?.length) {
          expect(await card.locator('.breadcrumb').textContent()).toBe(chunk.meta.headers.join(' › '));
        }
      }
      expect(ordered.some((c) => c.meta.headers?.length)).toBe(true);
      // The PDF's chunks carry their page.
      await p.goto(
        `${kilde.url}/#/documents/${encodeURIComponent('read/multi_page.pdf')}?collection=console-read`,
      );
      await p.getByRole('heading', { name: 'multi_page.pdf' }).waitFor();
      await p.locator('li.chunk').first().waitFor();
      expect(await p.locator('li.chunk .chunk-meta').first().textContent()).toMatch(/page 1/);
      expect(await p.locator('li.chunk .chunk-meta').first().textContent()).toMatch(/engine \w+/);
    });

    const searchFor = async (query: string, collection: string) => {
      const p = await open();
      await signIn();
      await p
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Search', exact: true })
        .click();
      await p.getByLabel('Query').fill(query);
      await p.getByLabel(collection, { exact: true }).check();
      const answer = p.waitForResponse((r) => r.url().endsWith('/search'));
      await p.getByRole('button', { name: 'Search', exact: true }).click();
      const res = await answer;
      expect(res.status()).toBe(200);
      expect(res.request().postDataJSON()).toMatchObject({
        queries: [query],
        collection_names: [collection],
        explain: true,
      });
      const body = (await res.json()) as {
        distances: number[][];
        explanations?: { path: string; score: number }[][];
        timings_ms?: Record<string, number>;
      };
      const hits = p.locator('li.hit');
      await hits.first().waitFor();
      return { p, body, hits };
    };

    it('searches: every hit with its score, linked to its document', async () => {
      await kilde.ingest('multi_page.pdf', 'search/multi_page.pdf', 'console-search');
      const { body, hits } = await searchFor('page', 'console-search');
      expect(body.distances[0]?.length).toBeGreaterThan(0);
      expect(await hits.count()).toBe(body.distances[0]?.length);
      for (const [i, score] of (body.distances[0] ?? []).entries()) {
        expect(await hits.nth(i).locator('.score').textContent()).toBe(`score ${score.toFixed(4)}`);
      }
      expect(await hits.first().getByRole('link').getAttribute('href')).toBe(
        `#/documents/${encodeURIComponent('search/multi_page.pdf')}?collection=console-search`,
      );
    });

    it("expands a hit's explanation and shows the stage timings", async () => {
      await kilde.ingest('multi_page.pdf', 'explain/multi_page.pdf', 'console-explain');
      const { p, body, hits } = await searchFor('page', 'console-explain');
      const first = body.explanations?.[0]?.[0];
      expect(first).toBeDefined();
      expect(Object.keys(body.timings_ms ?? {})).toContain('total');
      expect(await p.getByLabel('Stage timings').textContent()).toContain('total');
      const why = hits.first().locator('details.why');
      expect(await why.getAttribute('open')).toBeNull();
      await why.getByText('Why this rank').click();
      await why.locator('table').waitFor();
      const text = await why.locator('table').textContent();
      expect(text).toContain(first?.path);
      expect(text).toContain(first?.score.toFixed(4));
    });

    it('restores an older version only after confirmation', async () => {
      const v1 = new TextEncoder().encode('# Notes\n\nThe first version talks about herons.\n');
      const v2 = new TextEncoder().encode('# Notes\n\nThe second version talks about cormorants.\n');
      await kilde.ingest({ name: 'notes.md', bytes: v1 }, 'notes.md', 'console-versions');
      await kilde.ingest({ name: 'notes.md', bytes: v2 }, 'notes.md', 'console-versions');
      type Versions = { versions: { version: string; live: boolean }[] };
      const before = await kilde.api<Versions>(
        'GET',
        '/api/v1/documents/notes.md/versions?collection_name=console-versions',
      );
      expect(before.body.versions.length).toBeGreaterThanOrEqual(2);
      const old = before.body.versions.find((v) => !v.live)!;

      const p = await open();
      await signIn();
      await p.goto(`${kilde.url}/#/collections/console-versions`);
      await p.getByRole('button', { name: 'Versions' }).click();
      await p.getByRole('button', { name: `Restore version ${old.version}` }).click();
      const dialog = p.getByRole('dialog');
      await dialog.waitFor();
      // Cancel changes nothing.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      const still = await kilde.api<Versions>(
        'GET',
        '/api/v1/documents/notes.md/versions?collection_name=console-versions',
      );
      expect(still.body.versions.find((v) => v.live)?.version).not.toBe(old.version);
      // Confirmed, the old version is live and its text is what the index holds.
      await p.getByRole('button', { name: `Restore version ${old.version}` }).click();
      await dialog.getByRole('button', { name: 'Restore' }).click();
      await p.getByRole('status').waitFor();
      expect(await p.getByRole('status').textContent()).toContain(
        `Restored version ${old.version.slice(0, 12)}`,
      );
      const after = await kilde.api<Versions>(
        'GET',
        '/api/v1/documents/notes.md/versions?collection_name=console-versions',
      );
      expect(after.body.versions.find((v) => v.live)?.version).toBe(old.version);
      const chunks = await kilde.api<{ chunks: { content: string }[] }>(
        'GET',
        '/api/v1/documents/notes.md/chunks?include_content=full',
      );
      expect(chunks.body.chunks.map((c) => c.content).join(' ')).toContain('herons');
    });

    it('shows the limits the server enforces: bytes per file and characters of text', async () => {
      const { body: info } = await kilde.api<{
        ingest: { max_upload_bytes: number; max_text_chars: number };
      }>('GET', '/api/v1/info');
      const p = await open();
      await signIn();
      await p.goto(`${kilde.url}/#/upload?collection=console-limits`);
      const limits = await p.getByTestId('limits').textContent();
      expect(limits).toContain(`${info.ingest.max_text_chars.toLocaleString('en')} characters`);
      expect(limits).toContain(`${Math.round(info.ingest.max_upload_bytes / 1024 / 1024)}`);
    });

    it('uploading a file the CLI ingested makes a new version of it, not a second document', async () => {
      // `kilde ingest --url` names the file by its path under its root, no file_id.
      const form = new FormData();
      form.set('path', 'proj/notes/guide.md');
      form.set('collection_name', 'console-same');
      form.set('user_id', 'cli');
      form.set('file', new Blob(['# Guide\n\nThe first guide talks about herons.\n']), 'guide.md');
      const put = await fetch(`${kilde.url}/api/v1/ingest`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${KEY}` },
        body: form,
      });
      expect(put.status).toBe(200);
      const p = await open();
      await signIn();
      await p.goto(`${kilde.url}/#/upload?collection=console-same`);
      await p.getByLabel('Choose files').setInputFiles({
        name: 'guide.md',
        mimeType: 'text/markdown',
        buffer: Buffer.from('# Guide\n\nThe second guide talks about cormorants.\n'),
      });
      await p.locator('li.upload[data-file="guide.md"][data-state="done"]').waitFor({ timeout: 60_000 });
      const docs = await kilde.api<{ documents: { file_id: string }[] }>(
        'GET',
        '/api/v1/collections/console-same/documents',
      );
      const id = fileIdFor('console-same', 'proj/notes/guide.md');
      expect(docs.body.documents.map((d) => d.file_id)).toEqual([id]);
      const versions = await kilde.api<{ versions: unknown[] }>(
        'GET',
        `/api/v1/documents/${id}/versions?collection_name=console-same`,
      );
      expect(versions.body.versions).toHaveLength(2);
    });

    it('deletes a document, then the collection, each only after confirmation', async () => {
      await kilde.ingest(
        { name: 'a.md', bytes: new TextEncoder().encode('# A\n\nAlpha.\n') },
        'del-a',
        'console-delete',
      );
      await kilde.ingest(
        { name: 'b.md', bytes: new TextEncoder().encode('# B\n\nBeta.\n') },
        'del-b',
        'console-delete',
      );
      type Docs = { documents: { file_id: string }[] };
      const docs = async () =>
        (await kilde.api<Docs>('GET', '/api/v1/collections/console-delete/documents')).body.documents
          .map((d) => d.file_id)
          .sort();
      const p = await open();
      await signIn();
      await p.goto(`${kilde.url}/#/collections/console-delete`);
      await p.getByRole('button', { name: 'Delete a.md' }).click();
      const dialog = p.getByRole('dialog');
      await dialog.waitFor();
      expect(await dialog.textContent()).toContain('cannot be undone');
      // Cancel deletes nothing.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      expect(await docs()).toEqual(['del-a', 'del-b']);
      // Confirmed, the document is gone from the index and from the list.
      await p.getByRole('button', { name: 'Delete a.md' }).click();
      await dialog.getByRole('button', { name: 'Delete document' }).click();
      await p.getByRole('status').waitFor();
      expect(await p.getByRole('status').textContent()).toContain('Deleted a.md');
      expect(await docs()).toEqual(['del-b']);
      await p.getByRole('button', { name: 'Delete a.md' }).waitFor({ state: 'detached' });
      // The collection: cancel first, then confirm.
      await p.getByRole('button', { name: 'Delete collection' }).click();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      expect(await docs()).toEqual(['del-b']);
      await p.getByRole('button', { name: 'Delete collection' }).click();
      await dialog.getByRole('button', { name: 'Delete collection' }).click();
      await p.getByRole('status').filter({ hasText: 'Deleted the collection' }).waitFor();
      const { body } = await kilde.api<{ collections: { name: string }[] }>('GET', '/api/v1/collections');
      expect(body.collections.map((c) => c.name)).not.toContain('console-delete');
    });

    it('stays usable on a narrow window: navigation reachable, nothing wider than the screen', async () => {
      const p = await open({ width: 390, height: 800 });
      await signIn();
      await p.getByRole('heading', { name: 'Collections' }).waitFor();
      for (const name of ['Collections', 'Upload', 'Search']) {
        await expect(
          p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).isVisible(),
        ).resolves.toBe(true);
      }
      await p
        .getByRole('navigation', { name: 'Main' })
        .getByRole('link', { name: 'Search', exact: true })
        .click();
      await p.getByLabel('Query').waitFor();
      // Nothing wider than the window: no sideways scrolling.
      expect(await p.locator('html').evaluate((html) => html.scrollWidth)).toBeLessThanOrEqual(390);
    });
  },
);

const FIXTURES_DIR = new URL('../fixtures/documents', import.meta.url).pathname;
