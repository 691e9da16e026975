import { spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createExtractor, ownPool } from '../../src/extract/create-extractor.js';
import type { Extractor, SourceFile } from '../../src/extract/extractor.js';
import type { ExtractTasks } from '../../src/extract/pool-tasks.js';
import { createLocalOfficeRenderer } from '../../src/extract/vision/office-render.js';
import type { WorkerPool } from '../../src/pool/worker-pool.js';
import { type FakeGotenberg, startFakeGotenberg } from '../fakes/gotenberg.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { visionRequestOf } from '../fakes/openai-vision.js';
import { logSink } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { wParagraph, writeDocx, writePdf } from '../reliability/hostile-documents.js';
import {
  diagramPng,
  drawingParagraph,
  flowchartBody,
  INCH,
  paragraph,
  picture,
  writeTestDocx,
} from './docx-builder.js';
import { closedPortUrl, DOCS, failure, settings, silent } from './helpers.js';

let llm: FakeChatServer;
let gotenberg: FakeGotenberg;
let dir: string;
/** Engines by configuration: a pool's workers load pdf.js and Skia once, not per test. */
const cached = new Map<string, Extractor>();
const open: Extractor[] = [];

/** A PDF the fake Gotenberg answers with: two US Letter pages. */
let letterPdf: string;
/**
 * One worker pool for every engine here (its worker loads pdf.js and Skia once); its package limit
 * is lowered so a small zip bomb trips it. Time-outs of the outbound calls run on each engine's clock.
 */
let pool: WorkerPool<ExtractTasks>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-vision-'));
  letterPdf = join(dir, 'letter.pdf');
  await writePdf(letterPdf, 2);
  [llm, gotenberg] = await Promise.all([
    startFakeChatServer(),
    startFakeGotenberg({ kind: 'ok', pdf: letterPdf }),
  ]);
  pool = ownPool(
    settings({ EXTRACTION_WORKERS: '1', EXTRACTION_MAX_ARCHIVE_BYTES: String(8 * 1024 * 1024) }),
    {
      log: silent,
    },
  );
});
afterAll(async () => {
  await Promise.all([...cached.values()].map((e) => e.close?.()));
  await Promise.all([llm.close(), gotenberg.close(), pool.close()]);
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  llm.requests.length = 0;
  gotenberg.requests.length = 0;
  llm.mode = { kind: 'ok', reply: () => '# Transskription\n\nTeksten fra siderne.' };
  gotenberg.mode = { kind: 'ok', pdf: letterPdf };
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close?.()));
});

function engine(
  name: string,
  env: Record<string, string> = {},
  deps: { clock?: ManualClock; log?: pino.Logger } = {},
): Extractor {
  const s = settings({
    EXTRACTION_ENGINE: name,
    EXTRACTION_WORKERS: '1',
    VISION_LLM_API_BASE_URL: llm.baseUrl,
    VISION_LLM_MODEL: 'qwen2.5-vl',
    VISION_LLM_API_KEY: 'vision-key',
    VISION_LLM_DPI: '72',
    OFFICE_RENDER_URL: gotenberg.url,
    ...env,
  });
  const key = JSON.stringify([name, env]);
  const shared = !deps.clock && !deps.log;
  const known = shared ? cached.get(key) : undefined;
  if (known) return known;
  const e = createExtractor(name, s, {
    log: deps.log ?? silent,
    pool,
    ...(deps.clock ? { clock: deps.clock } : {}),
  });
  if (shared) cached.set(key, e);
  else open.push(e);
  return e;
}

async function pdf(name: string, pages: number, size?: readonly [number, number]): Promise<SourceFile> {
  const path = join(dir, name);
  await writePdf(path, pages, size ? { size } : {});
  return { path, filename: name };
}

const fixture = (name: string): SourceFile => ({ path: join(DOCS, name), filename: name });

async function untilRequest(server: { requests: unknown[] }): Promise<void> {
  while (server.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
}

describe('vision-llm: what the vision endpoint receives', () => {
  it('all pages of a PDF in one call: one PNG per page at VISION_LLM_DPI, the model, max_tokens, the key', async () => {
    const a4 = await pdf('a4.pdf', 3, [595, 842]);
    const docs = await engine('vision-llm', { VISION_LLM_DPI: '150' }).extract(a4);
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]?.path).toBe('/v1/chat/completions');
    const sent = visionRequestOf(llm.requests[0]!);
    expect(sent).toMatchObject({
      model: 'qwen2.5-vl',
      maxTokens: 16384,
      temperature: 0,
      authorization: 'Bearer vision-key',
    });
    // A4 is 595 × 842 pt: 8.26 × 11.69 in, at 150 dpi 1240 × 1754 px.
    expect(sent.images.map((i) => [i.mime, i.width, i.height])).toEqual([
      ['image/png', 1240, 1754],
      ['image/png', 1240, 1754],
      ['image/png', 1240, 1754],
    ]);
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({
      text: '# Transskription\n\nTeksten fra siderne.',
      extractor: 'vision-llm',
      vision_profile: 'general',
      metadata: { mime_type: 'application/pdf', page_count: 3, vision_pages: 3, vision_dpi: 150 },
    });
  });

  it('sends at most VISION_LLM_MAX_PAGES pages and says so in the log and the metadata', async () => {
    const sink = logSink();
    const log = pino({ level: 'debug' }, sink.stream);
    const long = await pdf('long.pdf', 5);
    const [doc] = await engine('vision-llm', { VISION_LLM_MAX_PAGES: '2' }, { log }).extract(long);
    const sent = visionRequestOf(llm.requests[0]!);
    // US Letter at 72 dpi: 612 × 792 px.
    expect(sent.images.map((i) => [i.width, i.height])).toEqual([
      [612, 792],
      [612, 792],
    ]);
    expect(sent.prompt).toContain('You are given 2 page images, in order, of one document.');
    expect(doc?.metadata).toMatchObject({ page_count: 5, vision_pages: 2 });
    expect(sink.lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        pages: 5,
        sent: 2,
        msg: 'document has more pages than VISION_LLM_MAX_PAGES: only the first are sent to the vision model',
      }),
    );
  });

  it.each([
    ['general', /faithful GitHub-flavoured Markdown/],
    ['diagram', /"## Lanes".*"## Phases".*"## Steps".*```mermaid/s],
    ['ocr', /as plain text, exactly as printed/],
  ])(
    'profile %s shapes the prompt; the language hint keeps the source language verbatim',
    async (profile, task) => {
      const [doc] = await engine('vision-llm', { VISION_LLM_LANGUAGE_HINT: 'Danish' }).extract(
        fixture('right_to_left_01.pdf'),
        {
          profile,
        },
      );
      const sent = visionRequestOf(llm.requests[0]!);
      expect(sent.prompt).toMatch(task);
      expect(sent.prompt).toContain(
        'The document is written in Danish. Keep every word in Danish exactly as written: do not translate, summarise or correct anything.',
      );
      expect(doc?.vision_profile).toBe(profile);
    },
  );

  it('without a hint the model is told to keep the document language; VISION_LLM_MAX_TOKENS is max_tokens', async () => {
    await engine('vision-llm', { VISION_LLM_MAX_TOKENS: '4096' }).extract(fixture('right_to_left_01.pdf'));
    const sent = visionRequestOf(llm.requests[0]!);
    expect(sent.maxTokens).toBe(4096);
    expect(sent.prompt).toContain("Keep every word in the document's own language exactly as written");
  });

  it('the hybrid engine profiles are not for callers', async () => {
    const err = await failure(
      engine('vision-llm').extract(fixture('right_to_left_01.pdf'), { profile: 'figure' }),
    );
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
    expect(llm.requests).toHaveLength(0);
  });
});

describe('vision-llm: output over the cap fails, never truncates', () => {
  it('finish_reason "length" is EXTRACTION_FAILED saying so', async () => {
    llm.mode = { kind: 'ok', reply: () => '# Halvdelen af teksten', finishReason: 'length' };
    const err = await failure(engine('vision-llm').extract(fixture('right_to_left_01.pdf')));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422, exposed: true });
    expect(err.message).toBe(
      'Vision output exceeded VISION_LLM_MAX_TOKENS (16384 tokens): the extraction fails rather than index a truncated text; raise VISION_LLM_MAX_TOKENS or split the document',
    );
  });

  it('an answer reporting more completion tokens than the cap fails the same way', async () => {
    llm.mode = { kind: 'ok', reply: () => 'lang tekst', completionTokens: 2001 };
    const err = await failure(
      engine('vision-llm', { VISION_LLM_MAX_TOKENS: '2000' }).extract(fixture('right_to_left_01.pdf')),
    );
    expect(err.message).toMatch(/^Vision output exceeded VISION_LLM_MAX_TOKENS \(2000 tokens\)/);
  });
});

describe('vision-llm: a failing vision endpoint is EXTRACTION_FAILED', () => {
  it.each([
    [{ kind: 'status' as const, status: 500 }, 502, 'Vision endpoint answered HTTP 500'],
    [{ kind: 'status' as const, status: 401 }, 502, 'Vision endpoint answered HTTP 401'],
    [
      {
        kind: 'status' as const,
        status: 400,
        body: { error: { message: 'Too many images in one request', type: 'invalid_request_error' } },
      },
      422,
      'Vision endpoint answered HTTP 400: Too many images in one request',
    ],
    [{ kind: 'malformed' as const }, 502, 'Vision endpoint sent an answer that is not a chat completion'],
    [{ kind: 'ok' as const, reply: () => '   ' }, 502, 'Vision model returned no text'],
  ])('%o → %i', async (mode, status, message) => {
    llm.mode = mode;
    const err = await failure(engine('vision-llm').extract(fixture('right_to_left_01.pdf')));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: status, message });
  });

  it('unreachable → 502', async () => {
    const err = await failure(
      engine('vision-llm', { VISION_LLM_API_BASE_URL: `${await closedPortUrl()}/v1` }).extract(
        fixture('right_to_left_01.pdf'),
      ),
    );
    expect(err).toMatchObject({ statusCode: 502, message: 'Vision endpoint unreachable (ECONNREFUSED)' });
  });

  it('no answer within VISION_LLM_TIMEOUT → 504 (on a manual clock)', async () => {
    llm.mode = { kind: 'hang' };
    const clock = new ManualClock();
    const pending = failure(
      engine('vision-llm', { VISION_LLM_TIMEOUT: '90' }, { clock }).extract(fixture('right_to_left_01.pdf')),
    );
    await untilRequest(llm);
    clock.advance(89_000);
    clock.advance(1_000);
    const err = await pending;
    expect(err).toMatchObject({ statusCode: 504, message: 'Vision endpoint did not answer within 90 s' });
  });
});

describe('office documents: converted to PDF by the office renderer first', () => {
  it('Gotenberg receives the document as multipart `files` with its extension; its PDF is rasterised', async () => {
    const [doc] = await engine('vision-llm').extract(fixture('lorem_ipsum.docx'));
    expect(gotenberg.requests).toHaveLength(1);
    const req = gotenberg.requests[0]!;
    expect(req.path).toBe('/forms/libreoffice/convert');
    expect(req.files).toHaveLength(1);
    expect(req.files[0]).toMatchObject({
      field: 'files',
      filename: 'document.docx',
      type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    });
    expect(req.files[0]?.bytes.equals(await readFile(join(DOCS, 'lorem_ipsum.docx')))).toBe(true);
    // The fake converted it to two Letter pages.
    expect(visionRequestOf(llm.requests[0]!).images).toHaveLength(2);
    expect(doc?.metadata).toMatchObject({
      mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      page_count: 2,
    });
  });

  it.each([
    [
      {
        kind: 'status' as const,
        status: 400,
        text: 'LibreOffice failed to process a document: a password is required',
      },
      422,
      'Office renderer could not convert the document: LibreOffice failed to process a document: a password is required',
    ],
    [
      { kind: 'status' as const, status: 503, text: 'Service Unavailable' },
      502,
      'Office renderer answered HTTP 503',
    ],
    [{ kind: 'not-pdf' as const }, 502, 'Office renderer answered with something that is not a PDF'],
  ])(
    'Gotenberg %o → EXTRACTION_FAILED %i, the vision endpoint never called',
    async (mode, status, message) => {
      gotenberg.mode = mode;
      const err = await failure(engine('vision-llm').extract(fixture('powerpoint_sample.pptx')));
      expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: status, message });
      expect(gotenberg.requests[0]?.files[0]?.filename).toBe('document.pptx');
      expect(llm.requests).toHaveLength(0);
    },
  );

  it('Gotenberg unreachable → 502; silent past EXTRACTION_TIMEOUT → 504', async () => {
    const down = await failure(
      engine('vision-llm', { OFFICE_RENDER_URL: await closedPortUrl() }).extract(fixture('xlsx_01.xlsx')),
    );
    expect(down).toMatchObject({ statusCode: 502, message: 'Office renderer unreachable (ECONNREFUSED)' });

    gotenberg.mode = { kind: 'hang' };
    const clock = new ManualClock();
    const pending = failure(
      engine('vision-llm', { EXTRACTION_TIMEOUT: '30' }, { clock }).extract(fixture('lorem_ipsum.docx')),
    );
    await untilRequest(gotenberg);
    clock.advance(30_000);
    expect(await pending).toMatchObject({
      statusCode: 504,
      message: 'Office renderer did not answer within 30 s',
    });
  });

  it('a zip bomb is refused by the package checks before any renderer sees it', async () => {
    const bomb = join(dir, 'bomb.docx');
    await writeDocx(bomb, { chunk: wParagraph('a'.repeat(1000)), times: 20_000 });
    const err = await failure(
      engine('vision-llm').extract({
        path: bomb,
        filename: 'bomb.docx',
      }),
    );
    expect(err.message).toMatch(/EXTRACTION_MAX_ARCHIVE_BYTES/);
    expect(gotenberg.requests).toHaveLength(0);
  });

  it('formats it cannot render are refused', async () => {
    const err = await failure(engine('vision-llm').extract(fixture('table_06.html')));
    expect(err).toMatchObject({
      statusCode: 422,
      message:
        'Unsupported file type for the vision engines: text/html (they render PDF and office documents: DOCX, PPTX, XLSX, ODT, ODP, ODS, RTF)',
    });
  });
});

describe('local LibreOffice (no OFFICE_RENDER_URL)', () => {
  const hasSoffice = spawnSync('soffice', ['--version'], { stdio: 'ignore' }).status === 0;

  it.skipIf(!hasSoffice)('converts a DOCX for real (LibreOffice from Debian in CI)', async () => {
    const path = join(dir, 'real.docx');
    await writeTestDocx(path, {
      body: paragraph('Ansøgning om tilskud', 'Heading1') + paragraph('Frist: 1. marts.'),
    });
    const [doc] = await engine('vision-llm', { OFFICE_RENDER_URL: '' }).extract(
      { path, filename: 'real.docx' },
      {
        profile: 'ocr',
      },
    );
    const sent = visionRequestOf(llm.requests[0]!);
    // One US Letter page (the document's w:pgSz) at 72 dpi.
    expect(sent.images.map((i) => [i.width, i.height])).toEqual([[612, 792]]);
    expect(doc).toMatchObject({
      extractor: 'vision-llm',
      vision_profile: 'ocr',
      metadata: { page_count: 1 },
    });
  });

  it('no LibreOffice on the machine: EXTRACTION_FAILED saying what to configure', async () => {
    const office = createLocalOfficeRenderer({
      timeoutMs: 10_000,
      maxBytes: 1e8,
      log: silent,
      binaries: ['kilde-no-such-soffice'],
    });
    const err = await failure(office.toPdf(fixture('lorem_ipsum.docx'), 'docx', dir));
    expect(err).toMatchObject({
      statusCode: 500,
      message:
        'No office renderer: set OFFICE_RENDER_URL (a Gotenberg) or install LibreOffice (soffice) to render office documents for the vision engines',
    });
  });

  it('a conversion past EXTRACTION_TIMEOUT is killed with its process group (on a manual clock)', async () => {
    const pidFile = join(dir, 'soffice.pid');
    const fake = join(dir, 'fake-soffice');
    // Stands in for soffice's wrapper script: it starts a child and waits for it.
    await writeFile(fake, `#!/bin/sh\nsleep 300 &\necho $! > ${pidFile}\nwait\n`);
    await chmod(fake, 0o755);
    const clock = new ManualClock();
    const office = createLocalOfficeRenderer({
      timeoutMs: 60_000,
      maxBytes: 1e8,
      log: silent,
      binaries: [fake],
      clock,
    });
    const work = await mkdtemp(join(dir, 'work-'));
    const pending = failure(office.toPdf(fixture('lorem_ipsum.docx'), 'docx', work));
    while (!(await readFile(pidFile, 'utf8').catch(() => '')).trim())
      await new Promise((r) => setTimeout(r, 5));
    const child = Number((await readFile(pidFile, 'utf8')).trim());
    clock.advance(60_000);
    expect(await pending).toMatchObject({
      statusCode: 504,
      message: 'LibreOffice did not convert the document within 60 s',
    });
    // The grandchild went with the group (dead, or a zombie waiting for a reaper).
    const running = async () => {
      const stat = await readFile(`/proc/${child}/stat`, 'utf8').catch(() => '');
      return stat !== '' && stat.split(') ')[1]?.[0] !== 'Z';
    };
    for (let i = 0; i < 400 && (await running()); i++) await new Promise((r) => setTimeout(r, 5));
    expect(await running()).toBe(false);
    await office.close?.();
  });
});

describe('hybrid-diagram', () => {
  const LABELS = [
    'Modtag ansøgning',
    'Kontroller bilag',
    'Vurder sagen',
    'Send afgørelse',
    'Arkiver',
    'Luk sagen',
    'Opdater register',
    'Informer borger',
    'Følg op',
    'Evaluer',
    'Rapporter',
  ];

  it('a text-box flowchart: the native words plus a Mermaid graph asked for with the labels (diagram-topology)', async () => {
    const path = join(dir, 'flow.docx');
    await writeTestDocx(path, { body: paragraph('Sagsgang', 'Heading1') + flowchartBody(LABELS, 'Figur 1') });
    const graph = '```mermaid\nflowchart TD\n  A[Modtag ansøgning] --> B[Kontroller bilag]\n```';
    llm.mode = { kind: 'ok', reply: () => graph };
    const [doc] = await engine('hybrid-diagram', { VISION_LLM_LANGUAGE_HINT: 'Danish' }).extract({
      path,
      filename: 'flow.docx',
    });
    const sent = visionRequestOf(llm.requests[0]!);
    expect(sent.prompt).toContain('flowchart drawn with shapes and connectors');
    expect(sent.prompt).toContain(`Labels:\n${LABELS.map((l) => `- ${l}`).join('\n')}`);
    expect(sent.prompt).toContain('The document is written in Danish.');
    expect(sent.images).toHaveLength(2);
    expect(doc).toMatchObject({ extractor: 'hybrid-diagram', vision_profile: 'diagram-topology' });
    expect(doc?.text).toBe(`# Sagsgang\n\nFigur 1\n\n${LABELS.join('\n\n')}\n\n${graph}`);
  });

  it('a pasted diagram picture: the caption plus a graph transcribed from pixels (figure)', async () => {
    const path = join(dir, 'figure.docx');
    await writeTestDocx(path, {
      body:
        paragraph('Figur 2: ansøgningsforløbet') + drawingParagraph(picture('rIdImg1', 6 * INCH, 4 * INCH)),
      images: { rIdImg1: diagramPng(['Start', 'Behandl', 'Slut']) },
    });
    llm.mode = {
      kind: 'ok',
      reply: () => '```mermaid\nflowchart TD\n  A[Start] --> B[Behandl] --> C[Slut]\n```',
    };
    const [doc] = await engine('hybrid-diagram').extract({ path, filename: 'figure.docx' });
    const sent = visionRequestOf(llm.requests[0]!);
    expect(sent.prompt).toContain('a diagram pasted as a picture: its labels are pixels');
    expect(sent.prompt).not.toContain('Labels:');
    expect(doc).toMatchObject({ vision_profile: 'figure' });
    expect(doc?.text).toMatch(/^Figur 2: ansøgningsforløbet\n\n```mermaid\nflowchart TD/);
  });

  it('anything but a DOCX falls through to vision-llm', async () => {
    const [doc] = await engine('hybrid-diagram').extract(fixture('right_to_left_01.pdf'), {
      profile: 'diagram',
    });
    expect(doc).toMatchObject({ extractor: 'vision-llm', vision_profile: 'diagram' });
  });
});
