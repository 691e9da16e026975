/**
 * `npm run docs:screenshots`: the screenshots in docs/console.md. Starts a real `kilde serve all`
 * (LanceDB in a temporary directory), ingests a few fixture documents, drives Debian's Chromium
 * through every screen at 1280×800 (and one narrow window), and writes media/console/*.png.
 * A screen whose API is missing on this build is left out and named.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { FIXTURES, KEY, startKilde } from '../test/console/kilde.js';
import { CHROMIUM, hasChromium, launchChromium } from '../test/helpers/browser.js';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const OUT = fileURLToPath(new URL('../media/console/', import.meta.url));

if (!hasChromium) {
  console.error(`docs:screenshots needs ${CHROMIUM} (apt-get install chromium)`);
  process.exit(1);
}
await mkdir(OUT, { recursive: true });
const kilde = await startKilde();
const browser = await launchChromium();
const left: string[] = [];
try {
  await kilde.ingest('unit_test_headers.docx', 'handbook/unit_test_headers.docx', 'handbook');
  await kilde.ingest('multi_page.pdf', 'handbook/multi_page.pdf', 'handbook');
  await kilde.ingest('wiki_duck.html', 'handbook/wiki_duck.html', 'handbook');
  // Two versions of one file, for the versions panel.
  const notes = (text: string) => ({ name: 'notes.md', bytes: new TextEncoder().encode(text) });
  await kilde.ingest(notes('# Notes\n\nDucks are waterfowl.\n'), 'handbook/notes.md', 'handbook');
  await kilde.ingest(
    notes('# Notes\n\nDucks are waterfowl of the family Anatidae.\n'),
    'handbook/notes.md',
    'handbook',
  );

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const shot = async (name: string, p: Page = page) => {
    await p.screenshot({ path: join(OUT, `${name}.png`) });
    console.log(`wrote media/console/${name}.png`);
  };
  const step = async (name: string, routes: [string, string][], fn: () => Promise<void>) => {
    for (const [method, path] of routes) {
      if (!(await kilde.hasRoute(method, path))) {
        left.push(`${name} (needs ${method} ${path})`);
        return;
      }
    }
    await fn();
  };

  await page.goto(`${kilde.url}/`);
  await page.getByLabel('API key').fill('a-wrong-key');
  await page.getByLabel('API key').press('Enter');
  await step('sign-in', [['GET', '/api/v1/collections']], async () => {
    await page.getByRole('alert').waitFor();
  });
  await shot('sign-in');
  await step('collections', [['GET', '/api/v1/collections']], async () => {
    await page.getByLabel('API key').fill(KEY);
    await page.getByLabel('API key').press('Enter');
    await page.getByRole('heading', { name: 'Collections' }).waitFor();
    await shot('collections');
    await step('documents', [['GET', '/api/v1/collections/handbook/documents']], async () => {
      await page.getByRole('link', { name: 'handbook' }).click();
      await page.locator('li.doc').first().waitFor();
      await step('versions', [['GET', '/api/v1/documents/x/versions?collection_name=handbook']], async () => {
        await page
          .locator('li.doc', { hasText: 'notes.md' })
          .getByRole('button', { name: 'Versions' })
          .click();
        await page.locator('.versions table').waitFor();
      });
      await shot('documents');
    });
    await page.goto(
      `${kilde.url}/#/documents/${encodeURIComponent('handbook/unit_test_headers.docx')}?collection=handbook`,
    );
    await page.locator('li.chunk').first().waitFor();
    await shot('chunks');
    await step('upload', [['POST', '/api/v1/jobs']], async () => {
      await page.goto(`${kilde.url}/#/upload?collection=handbook`);
      // Playwright takes paths or buffers in one call, not both.
      const file = async (name: string, mimeType: string) => ({
        name,
        mimeType,
        buffer: await readFile(join(FIXTURES, name)),
      });
      await page
        .getByLabel('Choose files')
        .setInputFiles([
          await file('normal_4pages.pdf', 'application/pdf'),
          await file('word_tables.docx', DOCX),
          { name: 'broken.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.7\nnot a PDF\n') },
        ]);
      await page.locator('li.upload[data-state="done"]').nth(1).waitFor({ timeout: 60_000 });
      await page.locator('li.upload[data-state="failed"]').waitFor({ timeout: 60_000 });
      await shot('upload');
    });
    await page.goto(`${kilde.url}/#/search`);
    await page.getByLabel('Query').fill('duck');
    await page.getByLabel('handbook').check();
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('li.hit').first().waitFor();
    const why = page.locator('li.hit').first().getByText('Why this rank');
    if (await why.count()) {
      await why.click();
      await page.locator('li.hit details.why table').first().scrollIntoViewIfNeeded();
    } else left.push('search explanations (POST /search answered without explain)');
    await shot('search');
    // The same tab (the key is kept per tab), on a phone-sized window.
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${kilde.url}/#/collections/handbook`);
    await page.locator('li.doc').first().waitFor();
    await shot('narrow');
  });
  await context.close();
} finally {
  await browser.close();
  await kilde.close();
}
if (left.length > 0) console.log(`left out (API missing on this build): ${left.join('; ')}`);
process.exit(0);
