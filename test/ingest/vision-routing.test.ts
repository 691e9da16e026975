import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { StoredPoint } from '../../src/index/contract.js';
import {
  diagramPng,
  drawingParagraph,
  flowchartBody,
  INCH,
  paragraph,
  picture,
  writeTestDocx,
} from '../extract/docx-builder.js';
import { type FakeGotenberg, startFakeGotenberg } from '../fakes/gotenberg.js';
import { type FakeChatServer, startFakeChatServer } from '../fakes/openai-chat.js';
import { visionRequestOf } from '../fakes/openai-vision.js';
import { AUTH } from '../helpers/app.js';
import { writePdf } from '../reliability/hostile-documents.js';
import { FIXTURES, type Harness, pointsOf, startIngest, versionsOf } from './helpers/harness.js';

/*
 * EXTRACTION_ENGINE=auto through the whole ingest path over a real socket: routing, the diagram
 * engine against a fake vision endpoint and a fake Gotenberg, the default engine for the rest, and
 * what the decision leaves behind (the answer, every chunk's meta, the log lines, the metrics).
 */

const LABELS = [
  'Modtag ansøgning',
  'Registrer sagen',
  'Kontroller bilag',
  'Mangler der oplysninger',
  'Send brev til ansøger',
  'Vurder ansøgningen',
  'Indstil til afgørelse',
  'Godkend afgørelse',
  'Send afgørelse',
  'Arkiver sagen',
  'Opdater statistik',
  'Afslut sagen',
];
const TOPOLOGY =
  '```mermaid\nflowchart TD\n  A[Modtag ansøgning] --> B[Registrer sagen]\n  B --> C{Mangler der oplysninger}\n```';
const FIGURE = '```mermaid\nflowchart LR\n  S[Start] --> B[Behandl] --> E[Slut]\n```';

let llm: FakeChatServer;
let gotenberg: FakeGotenberg;
let h: Harness;
let base: string;
let dir: string;
let flowchart: string;
let figure: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-vision-ingest-'));
  const rendered = join(dir, 'rendered.pdf');
  await writePdf(rendered, 1);
  flowchart = join(dir, 'sagsgang.docx');
  await writeTestDocx(flowchart, {
    body: paragraph('Sagsgang for tilskud', 'Heading1') + flowchartBody(LABELS, 'Figur 1'),
  });
  figure = join(dir, 'forloeb.docx');
  await writeTestDocx(figure, {
    body: paragraph('Figur 2: ansøgningsforløbet') + drawingParagraph(picture('rIdImg1', 6 * INCH, 4 * INCH)),
    images: { rIdImg1: diagramPng(['Start', 'Behandl', 'Slut']) },
  });
  [llm, gotenberg] = await Promise.all([
    startFakeChatServer(),
    startFakeGotenberg({ kind: 'ok', pdf: rendered }),
  ]);
  h = await startIngest({
    EXTRACTION_ENGINE: 'auto',
    EXTRACTION_ROUTER_DEFAULT: 'inprocess',
    EXTRACTION_WORKERS: '1',
    VISION_LLM_API_BASE_URL: llm.baseUrl,
    VISION_LLM_MODEL: 'qwen2.5-vl',
    VISION_LLM_DPI: '72',
    OFFICE_RENDER_URL: gotenberg.url,
    CHUNK_SPLIT_BY: 'markdown',
  });
  base = await h.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await h?.close();
  await Promise.all([llm?.close(), gotenberg?.close()]);
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  llm.requests.length = 0;
  gotenberg.requests.length = 0;
  llm.mode = {
    kind: 'ok',
    reply: (req) => (visionRequestOf(req).prompt.includes('pasted as a picture') ? FIGURE : TOPOLOGY),
  };
  gotenberg.mode = { kind: 'ok', pdf: join(dir, 'rendered.pdf') };
});

async function ingest(fileId: string, path: string, filename: string) {
  const form = new FormData();
  form.append('file_id', fileId);
  form.append('collection_name', 'kb');
  form.append('user_id', 'u1');
  form.append('file', new Blob([await readFile(path)]), filename);
  const res = await fetch(`${base}/api/v1/ingest`, { method: 'PUT', headers: AUTH, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const routedLines = () => h.logs.lines.filter((l) => l.msg === 'extraction routed');
const contentOf = (points: readonly StoredPoint[]) => points.map((p) => p.content).join('\n');

describe('PUT /api/v1/ingest with EXTRACTION_ENGINE=auto', () => {
  it('a flowchart built from text boxes goes to hybrid-diagram: its real words plus the Mermaid graph', async () => {
    const res = await ingest('flow', flowchart, 'sagsgang.docx');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: true,
      collection_name: 'kb',
      extraction: {
        engine: 'hybrid-diagram',
        profile: 'diagram-topology',
        route: 'diagram',
        signal: 'vector-flowchart',
      },
    });
    const points = await pointsOf(h.index, 'flow');
    expect(points.length).toBe(res.body.chunks_count);
    for (const p of points) {
      expect(p.meta).toMatchObject({
        extractor: 'hybrid-diagram',
        vision_profile: 'diagram-topology',
        extraction_engine: 'hybrid-diagram',
        collection_name: 'kb',
      });
    }
    const text = contentOf(points);
    for (const label of LABELS) expect(text).toContain(label);
    expect(text).toContain('flowchart TD');
    expect(points[0]?.meta.headers).toEqual(['Sagsgang for tilskud']);
    // The vision endpoint saw the page and the labels it must use verbatim.
    const sent = visionRequestOf(llm.requests[0]!);
    expect(sent.images).toHaveLength(1);
    expect(sent.prompt).toContain(`- ${LABELS[3]}`);
    expect(gotenberg.requests[0]?.files[0]?.filename).toBe('document.docx');
  });

  it('a Word file dominated by a pasted diagram image goes to hybrid-diagram with the figure profile', async () => {
    const res = await ingest('figure', figure, 'forloeb.docx');
    expect(res.body).toMatchObject({
      status: true,
      extraction: { engine: 'hybrid-diagram', profile: 'figure', route: 'diagram', signal: 'raster-figure' },
    });
    const points = await pointsOf(h.index, 'figure');
    expect(contentOf(points)).toContain('Figur 2: ansøgningsforløbet');
    expect(contentOf(points)).toContain('S[Start] --> B[Behandl] --> E[Slut]');
    expect(
      points.every((p) => p.meta.extractor === 'hybrid-diagram' && p.meta.vision_profile === 'figure'),
    ).toBe(true);
  });

  it.each([
    ['lorem_ipsum.docx', 'none'],
    ['multi_page.pdf', 'not-docx'],
  ])('an ordinary %s goes to the default engine, marked as routed', async (name, signal) => {
    const fileId = `plain-${signal}`;
    const res = await ingest(fileId, join(FIXTURES, name), name);
    expect(res.body).toMatchObject({
      status: true,
      extraction: { engine: 'inprocess', profile: null, route: 'default', signal },
    });
    const points = await pointsOf(h.index, fileId);
    expect(points.length).toBeGreaterThan(0);
    for (const p of points) expect(p.meta).toMatchObject({ extractor: 'inprocess', vision_profile: null });
    expect(llm.requests).toHaveLength(0);
    expect(gotenberg.requests).toHaveLength(0);
  });

  it('logs each decision at INFO with the file id, the detector signals at DEBUG, and counts it', async () => {
    expect(routedLines()).toContainEqual(
      expect.objectContaining({
        level: 30,
        fileId: 'flow',
        file: 'sagsgang.docx',
        engine: 'hybrid-diagram',
        route: 'diagram',
        signal: 'vector-flowchart',
      }),
    );
    expect(routedLines()).toContainEqual(
      expect.objectContaining({
        fileId: 'plain-not-docx',
        engine: 'inprocess',
        route: 'default',
        signal: 'not-docx',
      }),
    );
    expect(h.logs.lines).toContainEqual(
      expect.objectContaining({
        level: 20,
        msg: 'routing signals',
        fileId: 'flow',
        shapes: 23,
        textBoxes: 12,
        bodyWords: 5,
        bodyImages: 0,
        largestImageEmu: 0,
        vector: true,
        raster: false,
      }),
    );
    expect(h.logs.lines).toContainEqual(
      expect.objectContaining({
        msg: 'routing signals',
        fileId: 'figure',
        bodyImages: 1,
        largestImageEmu: 24 * INCH * INCH,
      }),
    );
    const metrics = (await h.app.inject({ url: '/metrics', headers: AUTH })).body;
    expect(metrics).toContain('extraction_route_total{engine="hybrid-diagram",signal="vector-flowchart"} 1');
    expect(metrics).toContain('extraction_route_total{engine="hybrid-diagram",signal="raster-figure"} 1');
    expect(metrics).toContain('extraction_route_total{engine="inprocess",signal="none"} 1');
    expect(metrics).toContain('extraction_route_total{engine="inprocess",signal="not-docx"} 1');
  });
});

describe('a failing vision or office dependency: EXTRACTION_FAILED, the previous version stays', () => {
  it.each([
    [
      'the vision endpoint answers 500',
      () => {
        llm.mode = { kind: 'status', status: 500 };
      },
      502,
      'Vision endpoint answered HTTP 500',
    ],
    [
      'the vision output hits the cap',
      () => {
        llm.mode = { kind: 'ok', reply: () => '```mermaid\nflowchart TD\n  A --> ', finishReason: 'length' };
      },
      422,
      'Vision output exceeded VISION_LLM_MAX_TOKENS (16384 tokens)',
    ],
    [
      'the office renderer answers 503',
      () => {
        gotenberg.mode = { kind: 'status', status: 503, text: 'Service Unavailable' };
      },
      502,
      'Office renderer answered HTTP 503',
    ],
    [
      'the office renderer refuses the document',
      () => {
        gotenberg.mode = { kind: 'status', status: 400, text: 'LibreOffice failed to process a document' };
      },
      422,
      'Office renderer could not convert the document: LibreOffice failed to process a document',
    ],
  ])('%s', async (_what, breakIt, status, error) => {
    const first = await ingest('kept', flowchart, 'sagsgang.docx');
    expect(first.body.status).toBe(true);
    const before = await pointsOf(h.index, 'kept');
    breakIt();
    const res = await ingest('kept', flowchart, 'sagsgang.docx');
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ status: false, code: 'EXTRACTION_FAILED' });
    expect(String(res.body.error)).toContain(error);
    const after = await pointsOf(h.index, 'kept');
    expect(versionsOf(after)).toEqual(versionsOf(before));
    expect(after.map((p) => p.content)).toEqual(before.map((p) => p.content));
  });
});

describe('POST /api/v1/extract with the vision engines', () => {
  async function probe(fields: Record<string, string>, path: string, filename: string) {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    form.append('file', new Blob([await readFile(path)]), filename);
    const res = await fetch(`${base}/api/v1/extract`, { method: 'POST', headers: AUTH, body: form });
    return {
      status: res.status,
      body: (await res.json()) as Record<string, unknown> & { documents?: unknown[] },
    };
  }

  it('runs vision-llm with the profile asked for and echoes both', async () => {
    llm.mode = { kind: 'ok', reply: () => 'Side 1 af rapporten' };
    const res = await probe(
      { engine: 'vision-llm', profile: 'ocr' },
      join(FIXTURES, 'right_to_left_01.pdf'),
      'r.pdf',
    );
    expect(res.body).toMatchObject({ status: true, engine: 'vision-llm', profile: 'ocr' });
    expect(res.body.documents).toEqual([
      expect.objectContaining({
        text: 'Side 1 af rapporten',
        extractor: 'vision-llm',
        vision_profile: 'ocr',
      }),
    ]);
    expect(visionRequestOf(llm.requests[0]!).prompt).toContain('as plain text, exactly as printed');
  });

  it('echoes the profile hybrid-diagram chose when none was asked for', async () => {
    const res = await probe({ engine: 'hybrid-diagram' }, flowchart, 'sagsgang.docx');
    expect(res.body).toMatchObject({ status: true, engine: 'hybrid-diagram', profile: 'diagram-topology' });
  });

  it.each([
    [{ engine: 'auto' }, /routing mode/],
    [
      { engine: 'vision-llm', profile: 'figure' },
      /Unknown profile "figure"; choose one of general, diagram, ocr/,
    ],
    [{ engine: 'inprocess', profile: 'ocr' }, /profile is accepted only by vision engines/],
  ])('refuses %o with 400', async (fields, message) => {
    const res = await probe(fields, join(FIXTURES, 'right_to_left_01.pdf'), 'r.pdf');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      status: false,
      code: 'INVALID_REQUEST',
      error: expect.stringMatching(message),
    });
    expect(llm.requests).toHaveLength(0);
  });
});
