// npm run test:platforms-live: Kilde plugged into a real, unpatched Open WebUI (0.12.x from PyPI),
// through Open WebUI's own seams only (docs/integrations.md):
//
//   (a) the MCP tool server (TOOL_SERVER_CONNECTIONS, type mcp): a chat turn makes Open WebUI call
//       search_knowledge, the answer carries Kilde's hits and their sources; two users in different
//       groups (X-OpenWebUI-User-* and the {{USER_GROUPS}} header template, USER_ACCESS), 0 cross hits
//   (b) the OpenAPI tool server: Open WebUI imports Kilde's /openapi.json, finds the `search`
//       operation as a tool and calls it
//   (c) the external document loader (CONTENT_EXTRACTION_ENGINE=external): Open WebUI's knowledge
//       pipeline ingests a PDF and a DOCX through Kilde's PUT /process
//
// Open WebUI is installed with pip into .tmp/owui-venv (ignored; nothing global) on first use and
// runs on loopback, offline (HF_HUB_OFFLINE, OFFLINE_MODE, no telemetry), with WEBUI_AUTH on, an
// admin created through its API, and a scripted OpenAI-compatible model and embedding server
// (test/live/fake-openai-streaming.ts). `kilde serve all` runs from dist/ (built first). Without
// `python3 -m venv` or the package registry it says why and exits 0. Screenshots of Open WebUI
// showing Kilde's citations go to media/integrations/ when Debian's Chromium is installed.
//
//   OWUI_SPEC='open-webui==0.12.4'   what pip installs (default open-webui==0.12.*)
//   KEEP_TMP=1                       keep the temporary folder (Open WebUI's data, the logs)
//   SKIP_BUILD=1                     run dist/ as it is
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOCUMENTS } from '../test/fixtures/index.js';
import { CHROMIUM, hasChromium, launchChromium } from '../test/helpers/browser.js';
import { makePdf } from '../test/helpers/make-pdf.js';
import {
  type ChatRequest,
  type Decision,
  EMBEDDING_DIM,
  EMBEDDING_MODEL,
  type FakeOpenAi,
  MODEL_ID,
  startFakeOpenAi,
  textOf,
} from '../test/live/fake-openai-streaming.js';
import { startQdrantNodes } from '../test/live/qdrant-nodes.js';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const VENV = join(ROOT, '.tmp', 'owui-venv');
const PY = join(VENV, 'bin', 'python');
const SPEC = process.env.OWUI_SPEC ?? 'open-webui==0.12.*';
const MEDIA = join(ROOT, 'media', 'integrations');

const MAIN_KEY = 'platforms-live-main-key-0123456789';
const OWUI_KEY = 'platforms-live-open-webui-key-0123456789';
const PASSWORD = 'Kilde-live-test-1!';
/**
 * Open WebUI's FORWARD_USER_INFO_HEADER_JWT_SECRET and Kilde's USER_ACCESS_JWT_SECRET: the users
 * reach Kilde as a signed X-OpenWebUI-User-Jwt (OWUI_PLAIN_USER_HEADERS=1: the plain headers).
 */
const USER_JWT_SECRET = process.env.OWUI_PLAIN_USER_HEADERS
  ? undefined
  : 'platforms-live-user-jwt-secret-0123456789';

/** Which parts run (PLATFORMS=fork,qdrant…); all by default. */
const PLATFORMS = new Set(
  (process.env.PLATFORMS ?? 'upstream,fork,qdrant,librechat').split(',').map((p) => p.trim()),
);
const want = (part: string) => PLATFORMS.has(part);

const results: { name: string; ok: boolean; detail: string }[] = [];
function check(name: string, ok: boolean, detail: string) {
  results.push({ name, ok, detail });
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
}
function skip(reason: string): never {
  console.log(`SKIP test:platforms-live: ${reason}`);
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------
// Open WebUI in its own virtual environment

function ensureOpenWebUi(): string {
  const version = () =>
    spawnSync(PY, ['-c', 'import importlib.metadata as m; print(m.version("open-webui"))'], {
      encoding: 'utf8',
    });
  if (existsSync(PY)) {
    const v = version();
    if (v.status === 0) return v.stdout.trim();
  }
  if (spawnSync('python3', ['-m', 'venv', '--help'], { stdio: 'ignore' }).status !== 0) {
    skip('python3 -m venv is not available (apt-get install python3-venv)');
  }
  console.log(`installing ${SPEC} into ${VENV} (pip; several GB with torch, the first time only)...`);
  if (!existsSync(PY) && spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' }).status !== 0) {
    skip(`python3 -m venv ${VENV} failed`);
  }
  const pip = spawnSync(PY, ['-m', 'pip', 'install', '--progress-bar', 'off', SPEC], { stdio: 'inherit' });
  if (pip.status !== 0)
    skip(`pip install ${SPEC} failed (no package registry, or a dependency does not install here)`);
  const v = version();
  if (v.status !== 0) skip(`${SPEC} installed but does not import`);
  return v.stdout.trim();
}

/** What every Open WebUI here runs with: loopback, offline, signed-in users, the scripted model. */
function owuiBaseEnv(dataDir: string, model: FakeOpenAi): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    WEBUI_SECRET_KEY: 'platforms-live-secret',
    WEBUI_AUTH: 'true',
    ENABLE_SIGNUP: 'true',
    ENABLE_PERSISTENT_CONFIG: 'false',
    OFFLINE_MODE: 'true',
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    ANONYMIZED_TELEMETRY: 'false',
    DO_NOT_TRACK: 'true',
    SCARF_NO_ANALYTICS: 'true',
    ENABLE_VERSION_UPDATE_CHECK: 'false',
    ENABLE_OLLAMA_API: 'false',
    ENABLE_OPENAI_API: 'true',
    OPENAI_API_BASE_URL: model.baseUrl,
    OPENAI_API_KEY: 'sk-fake',
    BYPASS_MODEL_ACCESS_CONTROL: 'true',
    RAG_EMBEDDING_ENGINE: 'openai',
    RAG_EMBEDDING_MODEL: EMBEDDING_MODEL,
    RAG_OPENAI_API_BASE_URL: model.baseUrl,
    RAG_OPENAI_API_KEY: 'sk-fake',
    RAG_RERANKING_MODEL: '',
    RAG_EMBEDDING_MODEL_AUTO_UPDATE: 'false',
    AUDIO_STT_ENGINE: 'openai',
    ENABLE_TITLE_GENERATION: 'false',
    ENABLE_TAGS_GENERATION: 'false',
    ENABLE_FOLLOW_UP_GENERATION: 'false',
    ENABLE_AUTOCOMPLETE_GENERATION: 'false',
    ENABLE_RETRIEVAL_QUERY_GENERATION: 'false',
    ENABLE_CODE_INTERPRETER: 'false',
  };
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

const children: ChildProcess[] = [];
function start(cmd: string, args: string[], env: Record<string, string>, log: string): ChildProcess {
  const out = openSync(log, 'a');
  const child = spawn(cmd, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', out, out],
    detached: true,
  });
  children.push(child);
  return child;
}

async function stopAll() {
  for (const child of children.reverse()) {
    if (child.exitCode !== null || child.pid === undefined) continue;
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const exited = await Promise.race([
      new Promise<boolean>((r) => child.once('exit', () => r(true))),
      sleep(15_000).then(() => false),
    ]);
    if (!exited) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(url: string, what: string, seconds: number, child: ChildProcess, log: string) {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (child.exitCode !== null) {
      throw new Error(`${what} exited (${child.exitCode}); last lines of ${log}:\n${tail(log)}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await sleep(1000);
  }
  throw new Error(`${what} did not answer ${url} within ${seconds} s; last lines of ${log}:\n${tail(log)}`);
}

function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

// ---------------------------------------------------------------------------------------------
// Open WebUI's API

class Owui {
  constructor(
    readonly url: string,
    readonly token = '',
  ) {}
  as(token: string) {
    return new Owui(this.url, token);
  }
  async call<T>(method: string, path: string, body?: unknown, form?: FormData): Promise<T> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(form ? { body: form } : body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(180_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`Open WebUI ${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

interface ChatMessageRecord {
  id: string;
  role: string;
  content: string;
  done?: boolean;
  sources?: Array<{
    source?: { name?: string; id?: string };
    document?: string[];
    metadata?: Record<string, unknown>[];
  }>;
  error?: unknown;
  output?: unknown;
}

/** One chat turn as the web client sends it: a saved chat, then /api/chat/completions, then the stored answer. */
async function chatTurn(api: Owui, question: string, toolIds: string[], files: unknown[] = []) {
  const userId = crypto.randomUUID();
  const assistantId = crypto.randomUUID();
  const now = Math.floor(Date.now() / 1000);
  const user = {
    id: userId,
    parentId: null,
    childrenIds: [assistantId],
    role: 'user',
    content: question,
    timestamp: now,
    models: [MODEL_ID],
    ...(files.length > 0 ? { files } : {}),
  };
  const assistant = {
    id: assistantId,
    parentId: userId,
    childrenIds: [],
    role: 'assistant',
    content: '',
    model: MODEL_ID,
    modelName: MODEL_ID,
    done: false,
    timestamp: now,
  };
  const chat = await api.call<{ id: string }>('POST', '/api/v1/chats/new', {
    chat: {
      title: question.slice(0, 40),
      models: [MODEL_ID],
      messages: [user, assistant],
      history: { messages: { [userId]: user, [assistantId]: assistant }, currentId: assistantId },
      params: { function_calling: 'native' },
      timestamp: now * 1000,
    },
  });
  await api.call('POST', '/api/chat/completions', {
    model: MODEL_ID,
    messages: [{ role: 'user', content: question }],
    stream: true,
    chat_id: chat.id,
    id: assistantId,
    parent_id: userId,
    user_message: user,
    tool_ids: toolIds,
    ...(files.length > 0 ? { files } : {}),
    params: { function_calling: 'native' },
    features: {},
    background_tasks: { title_generation: false, tags_generation: false, follow_up_generation: false },
  });
  const until = Date.now() + 180_000;
  for (;;) {
    const stored = await api.call<{ chat: { history: { messages: Record<string, ChatMessageRecord> } } }>(
      'GET',
      `/api/v1/chats/${chat.id}`,
    );
    const answer = stored.chat.history.messages[assistantId];
    if (answer?.done || answer?.error) return { chatId: chat.id, answer };
    if (Date.now() > until)
      throw new Error(`the chat turn did not finish: ${JSON.stringify(answer).slice(0, 500)}`);
    await sleep(1000);
  }
}

// ---------------------------------------------------------------------------------------------
// The scripted model

const ENG = 'Atlas';
const SALES = 'Borealis';

/** The tool's result as a model would cite it: each passage with its source file. */
function cite(result: string): string {
  const flat = (t: string) =>
    t
      .replace(/^#[^\n]*\n+/, '')
      .replace(/\s+/g, ' ')
      .trim();
  try {
    const parsed = JSON.parse(result) as {
      results?: { text: string; citation?: { file?: string } }[];
      documents?: string[][];
      metadatas?: { name?: string; source?: string }[][];
    };
    if (parsed.results)
      return parsed.results.map((r) => `- ${flat(r.text)} [${r.citation?.file}]`).join('\n');
    if (parsed.documents) {
      return (parsed.documents[0] ?? [])
        .map(
          (d, i) =>
            `- ${flat(d)} [${parsed.metadatas?.[0]?.[i]?.name ?? parsed.metadatas?.[0]?.[i]?.source}]`,
        )
        .join('\n');
    }
  } catch {
    // not JSON: quoted as it is
  }
  return result.slice(0, 1500);
}

function decide(req: ChatRequest): Decision {
  const last = req.messages.at(-1);
  const tools = (req.tools ?? []).map((t) => t.function.name);
  if (last?.role === 'tool') {
    // The answer quotes what the tool returned: Kilde's hits reach the user.
    return { text: `From the knowledge base:\n\n${cite(textOf(last.content))}` };
  }
  const question = textOf(last?.content);
  const mcp = tools.find((n) => n.endsWith('search_knowledge'));
  if (mcp) return { call: { name: mcp, arguments: { query: question, k: 5 } } };
  const rest = tools.find((n) => n === 'search');
  if (rest) {
    const named =
      /\[collections: ([^\]]+)\]/
        .exec(question)?.[1]
        ?.split(',')
        .map((s) => s.trim()) ?? [];
    return {
      call: {
        name: rest,
        arguments: {
          queries: [question.replace(/\[collections:[^\]]+\]/, '').trim()],
          collection_names: named,
          k: 5,
        },
      },
    };
  }
  // A RAG turn (the fork's external retrieval): Open WebUI put the hits into the prompt as
  // <source id="n" name="…">…</source>; the answer quotes the one that holds the question's project.
  const prompt = req.messages.map((m) => textOf(m.content)).join('\n');
  const context = prompt.slice(prompt.lastIndexOf('<context>'));
  const sources = [...context.matchAll(/<source id="(\d+)"[^>]*>([\s\S]*?)<\/source>/g)];
  if (prompt.includes('<context>') && sources.length > 0) {
    // The question's project: the last `Project X:` of the user's message (passages may hold others).
    const wanted = [...question.matchAll(/Project (\w+):/g)].at(-1)?.[1];
    const hit = sources.find((m) => (wanted ? m[2]!.includes(wanted) : true)) ?? sources[0]!;
    const passage = hit[2]!.replace(/\s+/g, ' ').trim();
    const from = wanted ? Math.max(0, passage.indexOf(wanted)) : 0;
    return { text: `From the attached file [${hit[1]}]: ${passage.slice(from, from + 300)}` };
  }
  return { text: `No tool was offered (tools: ${tools.join(', ') || 'none'}).` };
}

// ---------------------------------------------------------------------------------------------
// The reference deployment's patched fork (AarhusAI/open-webui): its external ingestion and
// external retrieval, driven through Open WebUI's own API with the fork's documented variables.

/**
 * The fork's backend: a folder holding its `open_webui` package (retrieval/external_service.py is
 * the fork's own module). It is run with this venv's Python ahead of the pip package. Nothing of
 * the fork is committed here; without the folder the fork's checks are skipped with the reason.
 */
const FORK_DIR = resolve(ROOT, process.env.OWUI_FORK_DIR ?? join('.tmp', 'owui-fork'));

/** Three pages, each with its own project, so a hit's page can be checked against its text. */
function forkPdf(): Buffer {
  const page = (project: string, fact: string) => [
    { text: `Project ${project}`, size: 18 },
    ...Array.from({ length: 30 }, (_, i) => ({
      text: `Project ${project} note ${i + 1}: ${fact} This line belongs to project ${project} only.`,
    })),
  ];
  return makePdf([
    page('Andromeda', 'the archive keeps invoices for five years.'),
    page('Bootes', 'the badge office opens at 08:00 on weekdays.'),
    page('Cassiopeia', 'the cold room holds samples at minus eighty degrees.'),
  ]);
}

async function runFork(kildeUrl: string, kildeLog: string, model: FakeOpenAi, tmp: string) {
  const marker = join(FORK_DIR, 'open_webui', 'retrieval', 'external_service.py');
  if (!existsSync(marker)) {
    console.log(
      `SKIP patched fork: ${marker} is absent (OWUI_FORK_DIR: a folder with the fork's backend package open_webui, from the public repository AarhusAI/open-webui)`,
    );
    return;
  }
  const base = existsSync(join(FORK_DIR, 'BASE'))
    ? readFileSync(join(FORK_DIR, 'BASE'), 'utf8').trim()
    : FORK_DIR;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = join(tmp, 'open-webui-fork.log');
  const owui = start(
    join(VENV, 'bin', 'open-webui'),
    ['serve', '--host', '127.0.0.1', '--port', String(port)],
    {
      ...owuiBaseEnv(join(tmp, 'owui-fork-data'), model),
      PYTHONPATH: FORK_DIR,
      FRONTEND_BUILD_DIR: join(FORK_DIR, 'open_webui', 'frontend'),
      // The fork's documented variables (docs/deployment.md#2-next-to-open-webui).
      RAG_RETRIEVAL_ENGINE: 'external',
      RAG_EXTERNAL_RETRIEVAL_URL: `${kildeUrl}/`,
      RAG_EXTERNAL_RETRIEVAL_API_KEY: MAIN_KEY,
      RAG_EXTERNAL_RETRIEVAL_TIMEOUT: '60',
      EXTERNAL_INGESTION_ENGINE: 'external',
      EXTERNAL_INGESTION_URL: kildeUrl,
      EXTERNAL_INGESTION_API_KEY: MAIN_KEY,
      EXTERNAL_INGESTION_TIMEOUT: '300',
    },
    log,
  );
  await waitFor(`${url}/health`, 'Open WebUI (patched fork)', 600, owui, log);
  console.log(`Open WebUI, the patched fork (${base}) at ${url}`);
  const anon = new Owui(url);
  const admin = anon.as(
    (
      await anon.call<{ token: string }>('POST', '/api/v1/auths/signup', {
        name: 'Admin',
        email: 'admin@example.com',
        password: PASSWORD,
      })
    ).token,
  );
  const kilde = (path: string, method = 'GET') =>
    fetch(`${kildeUrl}${path}`, { method, headers: { authorization: `Bearer ${MAIN_KEY}` } });

  // Upload: the fork hands the file to Kilde's PUT /api/v1/ingest (multipart, collection file-{id}).
  const form = new FormData();
  form.set('file', new Blob([forkPdf()], { type: 'application/pdf' }), 'projects.pdf');
  const uploaded = await admin.call<{ id: string; data?: { status?: string; error?: string } }>(
    'POST',
    '/api/v1/files/?process=true&process_in_background=false',
    undefined,
    form,
  );
  const stored = await admin.call<{
    data?: { status?: string; error?: string };
    meta?: Record<string, unknown>;
  }>('GET', `/api/v1/files/${uploaded.id}`);
  const chunksRes = await kilde(`/api/v1/documents/${uploaded.id}/chunks?include_content=full&limit=100`);
  const chunks = chunksRes.ok
    ? ((await chunksRes.json()) as {
        stats: { total_chunks: number; collection_name: string | null };
        chunks: { content?: string; meta: Record<string, unknown> }[];
      })
    : undefined;
  const ingestLines = readFileSync(kildeLog, 'utf8')
    .split('\n')
    .filter((l) => l.includes('/api/v1/ingest')).length;
  check(
    'fork: upload ingested in Kilde through the fork (PUT /api/v1/ingest)',
    stored.data?.status === 'completed' &&
      (chunks?.stats.total_chunks ?? 0) > 0 &&
      chunks?.stats.collection_name === `file-${uploaded.id}`,
    `Open WebUI file status ${stored.data?.status}${stored.data?.error ? ` (${stored.data.error})` : ''}, Kilde holds ${chunks?.stats.total_chunks ?? `none (${chunksRes.status})`} chunks in ${chunks?.stats.collection_name}, ingest requests logged: ${ingestLines}`,
  );

  // Chat: the file attached to the turn; the fork's get_sources_from_items asks Kilde's /search.
  const fileItem = {
    type: 'file',
    id: uploaded.id,
    name: 'projects.pdf',
    collection_name: `file-${uploaded.id}`,
    status: 'uploaded',
    file: { id: uploaded.id, filename: 'projects.pdf', meta: { name: 'projects.pdf' } },
  };
  const { chatId, answer } = await chatTurn(
    admin,
    'Project Cassiopeia: at what temperature are the samples kept?',
    [],
    [fileItem],
  );
  const sources = answer.sources ?? [];
  const docs = sources.flatMap((s) => (s.document ?? []).map((d, i) => ({ d, m: s.metadata?.[i] ?? {} })));
  const onPage = docs.find((x) => x.d.includes('Cassiopeia'));
  // The fork calls `${RAG_EXTERNAL_RETRIEVAL_URL}/search`: `//search` with the documented trailing slash.
  const searchLines = readFileSync(kildeLog, 'utf8')
    .split('\n')
    .filter((l) => /"method":"POST","path":"\/+search"/.test(l)).length;
  check(
    'fork: chat turn cites the hit on its page (POST /search)',
    (answer.content ?? '').includes('minus eighty') &&
      onPage !== undefined &&
      onPage.m.page === 2 &&
      (onPage.m.pages as number[] | undefined)?.includes(3) === true &&
      onPage.m.file_id === uploaded.id,
    `answer: ${(answer.content ?? '').slice(0, 90).replace(/\s+/g, ' ')}…; ${sources.length} source(s), ${docs.length} passage(s); the Cassiopeia passage: page ${onPage?.m.page} (0-based), pages ${JSON.stringify(onPage?.m.pages)}, file_id ${onPage?.m.file_id === uploaded.id ? 'the upload' : onPage?.m.file_id}, name ${onPage?.m.name}; /search requests logged: ${searchLines}`,
  );

  // A knowledge base: adding the file makes the fork ingest the same file_id into the knowledge
  // base's collection; the chat's file-<id> copy stays (versions are replaced per collection).
  const kb = await admin.call<{ id: string }>('POST', '/api/v1/knowledge/create', {
    name: 'Projects (fork)',
    description: "the fork's external ingestion",
  });
  await admin.call('POST', `/api/v1/knowledge/${kb.id}/file/add`, { file_id: uploaded.id });
  const hitsIn = async (collection: string) => {
    const res = await fetch(`${kildeUrl}/search`, {
      method: 'POST',
      headers: { authorization: `Bearer ${MAIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ queries: ['Cassiopeia cold room'], collection_names: [collection], k: 3 }),
    });
    return res.ok
      ? (((await res.json()) as { documents: string[][] }).documents[0]?.length ?? 0)
      : -res.status;
  };
  const inKb = await hitsIn(kb.id);
  const inFile = await hitsIn(`file-${uploaded.id}`);
  check(
    'fork: adding the file to a knowledge base ingests it there too (the file-<id> copy stays)',
    inKb > 0 && inFile > 0,
    `/search hits in the knowledge base's collection ${kb.id}: ${inKb}, in file-${uploaded.id}: ${inFile}`,
  );

  // The chat as its user sees it in the fork's web client: the answer and its citation, opened.
  if (hasChromium) {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${url}/auth`);
      await page.locator('input[type="email"]').fill('admin@example.com');
      await page.locator('input[type="password"]').fill(PASSWORD);
      await page.getByRole('button', { name: /sign in/i }).click();
      await page.waitForURL((u) => !u.pathname.startsWith('/auth'), { timeout: 60_000 });
      await page.goto(`${url}/c/${chatId}`);
      await page.waitForLoadState('networkidle').catch(() => undefined);
      await page
        .getByText('From the attached file')
        .first()
        .waitFor({ timeout: 60_000 })
        .catch(() => undefined);
      // An admin's first visit shows the release notes: closed as a user would.
      const notes = page.getByText("Okay, Let's Go!");
      if (await notes.isVisible().catch(() => false)) await notes.click().catch(() => undefined);
      await page.waitForTimeout(500);
      // The source chip under the answer opens Open WebUI's citation view (file, page, passage).
      const chip = page.getByText('projects.pdf').last();
      if (await chip.isVisible().catch(() => false)) await chip.click().catch(() => undefined);
      await page.waitForTimeout(1500);
      mkdirSync(MEDIA, { recursive: true });
      await page.screenshot({ path: join(MEDIA, 'open-webui-fork-citation.png') });
      console.log('screenshot media/integrations/open-webui-fork-citation.png');
    } catch (err) {
      console.log(`fork screenshot not taken: ${(err as Error).message}`);
    } finally {
      await browser.close();
    }
  }

  // Delete: the fork's delete tells Kilde (DELETE /api/v1/documents/{id}); Kilde holds nothing after.
  await admin.call('DELETE', `/api/v1/files/${uploaded.id}`);
  const after = await kilde(`/api/v1/documents/${uploaded.id}/chunks`);
  const afterBody = after.ok ? ((await after.json()) as { stats: { total_chunks: number } }) : undefined;
  const search = await fetch(`${kildeUrl}/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${MAIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      queries: ['Cassiopeia samples'],
      collection_names: [`file-${uploaded.id}`],
      k: 5,
    }),
  });
  const left = search.ok ? ((await search.json()) as { documents: string[][] }).documents[0]?.length : -1;
  const leftInKb = await hitsIn(kb.id);
  check(
    'fork: deleting the file in Open WebUI removes it from Kilde',
    (after.status === 404 || afterBody?.stats.total_chunks === 0) && left === 0 && leftInKb === 0,
    `chunks after the delete: ${afterBody ? afterBody.stats.total_chunks : `HTTP ${after.status}`}, /search hits in file-${uploaded.id}: ${left}, in the knowledge base: ${leftInKb}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Open WebUI's External Knowledge Sources reading a Kilde-written Qdrant collection directly:
// a real Qdrant, a second `kilde serve all` writing to it with the same embedding model as Open
// WebUI, and Open WebUI's own Qdrant reader (retrieval/external.py) through its admin API.

const QDRANT_BIN = process.env.QDRANT_BIN ?? '/work/qdrant-src/v1.18.3/target/perf/qdrant';

async function runQdrant(admin: Owui, model: FakeOpenAi, tmp: string) {
  if (!existsSync(QDRANT_BIN)) {
    console.log(
      `SKIP External Knowledge (Qdrant): no Qdrant binary at ${QDRANT_BIN} (QDRANT_BIN; docs/qdrant.md)`,
    );
    return;
  }
  const hasClient = () => spawnSync(PY, ['-c', 'import qdrant_client'], { stdio: 'ignore' }).status === 0;
  if (!hasClient()) {
    // Open WebUI's Qdrant reader needs qdrant-client (an optional dependency of the pip package).
    spawnSync(PY, ['-m', 'pip', 'install', '--progress-bar', 'off', 'qdrant-client'], { stdio: 'inherit' });
    if (!hasClient()) {
      console.log('SKIP External Knowledge (Qdrant): qdrant-client does not install into the venv');
      return;
    }
  }
  const qdrant = await startQdrantNodes(QDRANT_BIN, 1);
  try {
    const qdrantUrl = qdrant.urls[0]!;
    const port = await freePort();
    const kildeUrl = `http://127.0.0.1:${port}`;
    const log = join(tmp, 'kilde-qdrant.log');
    const kilde = start(
      join(ROOT, 'bin', 'kilde'),
      ['serve', 'all'],
      {
        HOST: '127.0.0.1',
        PORT: String(port),
        API_KEY: MAIN_KEY,
        VECTORDB_URI: qdrantUrl,
        VECTORDB_INDEX: 'kilde_owui',
        // The embedding model Open WebUI uses too (RAG_EMBEDDING_MODEL): query and chunk vectors match.
        EMBEDDING_PROVIDER: 'http-compat',
        EMBEDDING_API_BASE_URL: model.baseUrl,
        EMBEDDING_MODEL,
        EMBEDDING_DIM: String(EMBEDDING_DIM),
        KILDE_DATA_DIR: join(tmp, 'kilde-qdrant-data'),
        LOG_FORMAT: 'json',
      },
      log,
    );
    await waitFor(`${kildeUrl}/health`, 'kilde serve all (Qdrant)', 120, kilde, log);
    for (const [fileId, collection, text] of [
      ['q-eng', 'eng-docs', `# Engineering\n\nProject ${ENG}: the deploy freeze starts on Friday at 14:00.`],
      [
        'q-sales',
        'sales-docs',
        `# Sales\n\nProject ${SALES}: during a deploy freeze, discounts need the director.`,
      ],
    ] as const) {
      const form = new FormData();
      form.set('file_id', fileId);
      form.set('collection_name', collection);
      form.set('user_id', 'platforms-live');
      form.set('file', new Blob([text], { type: 'text/markdown' }), `${fileId}.md`);
      const res = await fetch(`${kildeUrl}/api/v1/ingest`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${MAIN_KEY}` },
        body: form,
      });
      if (!res.ok) throw new Error(`ingest ${fileId} into Qdrant: ${res.status} ${await res.text()}`);
    }
    const connection = await admin.call<{ id: string }>('POST', '/api/v1/knowledge/external/connections', {
      name: 'Kilde Qdrant',
      provider: 'qdrant',
      endpoint: qdrantUrl,
      config: { timeout: 30 },
    });
    // Kilde's layout: one physical collection, payload {content, meta}, named vector text-dense.
    const source = {
      type: 'collection',
      name: 'kilde_owui',
      config: {
        vector_field: 'text-dense',
        content_field: 'payload.content',
        metadata_field: 'payload.meta',
      },
    };
    const kb = await admin.call<{ id: string; meta?: unknown }>(
      'POST',
      '/api/v1/knowledge/external/knowledge/create',
      {
        name: 'Kilde (Qdrant, read directly)',
        description: "Kilde's Qdrant collection through Open WebUI's External Knowledge Sources",
        connection_id: connection.id,
        source,
      },
    );
    const got = await admin.call<Record<string, unknown>>(
      'POST',
      `/api/v1/knowledge/external/connections/${connection.id}/retrieve-test`,
      { query: `Project ${ENG} deploy freeze`, source, count: 5 },
    );
    // Open WebUI's "test retrieval" of the connection (flat lists), then a chat turn with the
    // knowledge base attached: get_sources_from_items → retrieve_external_knowledge → the sources.
    const docs = (got.documents as string[] | undefined) ?? [];
    const metas = (got.metadatas as Record<string, unknown>[] | undefined) ?? [];
    const { answer } = await chatTurn(
      admin,
      `Project ${ENG}: when does the deploy freeze start?`,
      [],
      [{ type: 'collection', id: kb.id, name: 'Kilde (Qdrant, read directly)', status: 'processed' }],
    );
    const cited = (answer.sources ?? []).flatMap((x) =>
      (x.document ?? []).map((d, i) => ({ d, m: x.metadata?.[i] ?? {} })),
    );
    const engHit = cited.find((c) => c.d.includes(ENG));
    check(
      "External Knowledge (Qdrant): Open WebUI reads Kilde's collection directly",
      docs.some((d) => d.includes(ENG)) &&
        (answer.content ?? '').includes('Friday') &&
        engHit?.m.collection_name === 'eng-docs',
      `knowledge ${kb.id} created; test retrieval: ${docs.length} hit(s), first ${JSON.stringify((docs[0] ?? '').slice(0, 60))} (meta.collection_name ${metas[0]?.collection_name}); chat turn: ${cited.length} cited passage(s), answer ${JSON.stringify((answer.content ?? '').slice(0, 90))}, the ${ENG} passage's source ${engHit?.m.source} in ${engHit?.m.collection_name}`,
    );
    const all = JSON.stringify({ docs, cited: cited.map((c) => c.d) });
    check(
      'External Knowledge (Qdrant): what is lost, as documented (no collection filter: every collection answers)',
      all.includes(SALES) && all.includes(ENG),
      `a question about ${ENG} also got the other collection's ${SALES} passage: ${all.includes(SALES)} (Open WebUI sends no filter; Kilde's collection, tenant and per-user filters are not applied)`,
    );
  } finally {
    await qdrant.close();
  }
}

// ---------------------------------------------------------------------------------------------
// LibreChat's own client code (danny-avila/LibreChat): uploadVectors, the file_search tool and
// deleteVectors, run with node against Kilde's LibreChat routes (test/live/librechat-client.cjs).

const LIBRECHAT_DIR = resolve(ROOT, process.env.LIBRECHAT_DIR ?? join('.tmp', 'librechat'));
const LIBRECHAT_SECRET = 'platforms-live-librechat-jwt-secret';
const LIBRECHAT_DEPS = [
  'axios',
  'form-data',
  'zod',
  '@langchain/core',
  'jsonwebtoken',
  'librechat-data-provider',
];

interface LibreChatSearch {
  content: string;
  artifact: {
    file_search?: { sources?: { content: string; pages: number[]; relevance: number; fileName: string }[] };
  } | null;
}
/** What test/live/librechat-client.cjs prints. */
interface LibreChatRun {
  fatal?: string;
  errors?: string[];
  upload?: { embedded?: boolean };
  uploadShared?: { embedded?: boolean };
  alice?: LibreChatSearch;
  bob?: LibreChatSearch;
  bobViaAgent?: LibreChatSearch;
  deleteStatus?: number | null;
  deleteBody?: unknown;
  afterDelete?: LibreChatSearch;
  deleteAgain?: number | string;
}

async function runLibreChat(kildeUrl: string, tmp: string) {
  const modules = [
    'api/server/services/Files/VectorDB/crud.js',
    'api/app/clients/tools/util/fileSearch.js',
  ].map((m) => join(LIBRECHAT_DIR, m));
  const missing = modules.filter((m) => !existsSync(m));
  if (missing.length > 0) {
    console.log(
      `SKIP LibreChat client: ${missing.join(', ')} absent (LIBRECHAT_DIR: LibreChat's modules at their repository paths, from the public repository danny-avila/LibreChat)`,
    );
    return;
  }
  if (!LIBRECHAT_DEPS.every((d) => existsSync(join(LIBRECHAT_DIR, 'node_modules', d)))) {
    console.log(`installing ${LIBRECHAT_DEPS.join(' ')} into ${LIBRECHAT_DIR} (npm)...`);
    if (!existsSync(join(LIBRECHAT_DIR, 'package.json')))
      writeFileSync(join(LIBRECHAT_DIR, 'package.json'), '{"private": true}\n');
    const npm = spawnSync(
      'npm',
      ['install', '--no-audit', '--no-fund', '--ignore-scripts', ...LIBRECHAT_DEPS],
      {
        cwd: LIBRECHAT_DIR,
        stdio: 'inherit',
      },
    );
    if (npm.status !== 0) {
      console.log('SKIP LibreChat client: npm install of its dependencies failed (no package registry?)');
      return;
    }
  }
  const pdf = join(tmp, 'projects.pdf');
  writeFileSync(pdf, forkPdf());
  const run = spawnSync(process.execPath, [join(ROOT, 'test', 'live', 'librechat-client.cjs')], {
    env: {
      ...process.env,
      LIBRECHAT_DIR,
      RAG_API_URL: kildeUrl,
      JWT_SECRET: LIBRECHAT_SECRET,
      PDF_PATH: pdf,
    },
    encoding: 'utf8',
    timeout: 300_000,
  });
  const line = run.stdout.trim().split('\n').at(-1) ?? '';
  let out: LibreChatRun;
  try {
    out = JSON.parse(line);
  } catch {
    check('LibreChat client', false, `no result (exit ${run.status}): ${run.stderr.slice(-800)}`);
    return;
  }
  if (out.fatal) {
    check('LibreChat client', false, `${out.fatal}; ${JSON.stringify(out.errors)}`);
    return;
  }
  check(
    "LibreChat uploadVectors (POST /embed) through LibreChat's crud.js",
    out.upload?.embedded === true && out.uploadShared?.embedded === true,
    `returned ${JSON.stringify(out.upload)}; with entity_id and storage_metadata: embedded ${out.uploadShared?.embedded}`,
  );
  const sources = out.alice?.artifact?.file_search?.sources ?? [];
  const cass = sources.find((s) => s.content.includes('Cassiopeia'));
  check(
    "LibreChat file_search tool (POST /query) through LibreChat's fileSearch.js",
    String(out.alice?.content).includes('minus eighty') &&
      cass !== undefined &&
      cass.pages[0] === 2 &&
      cass.fileName === 'projects.pdf',
    `${sources.length} source(s); the Cassiopeia passage: file ${cass?.fileName}, pages ${JSON.stringify(cass?.pages)} (rag_api's 0-based page), relevance ${cass?.relevance?.toFixed(4)}`,
  );
  check(
    "LibreChat file_search: another user's file is not found; an agent's shared file is, with its entity_id",
    !String(out.bob?.content).includes('Cassiopeia') &&
      String(out.bobViaAgent?.content).includes('Cassiopeia'),
    `bob on alice's file: ${JSON.stringify(String(out.bob?.content).slice(0, 80))}; bob through agent-1: ${String(out.bobViaAgent?.content).includes('Cassiopeia') ? 'hits' : 'nothing'}`,
  );
  check(
    "LibreChat deleteVectors (DELETE /documents) through LibreChat's crud.js",
    out.deleteStatus === 200 &&
      !String(out.afterDelete?.content).includes('Cassiopeia') &&
      out.deleteAgain === 'resolved' &&
      (out.errors ?? []).some((e) => e.startsWith('Error deleting vectors: 404')),
    `status ${out.deleteStatus} ${JSON.stringify(out.deleteBody)}; search after: ${JSON.stringify(String(out.afterDelete?.content).slice(0, 60))}; deleting again: Kilde ${(out.errors ?? []).find((e) => e.startsWith('Error deleting vectors')) ?? 'answered no error'}, LibreChat's deleteVectors ${out.deleteAgain} (a 404 counts as already deleted)`,
  );
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const owuiVersion = ensureOpenWebUi();
  console.log(`Open WebUI ${owuiVersion} (${VENV})`);
  const tmp = join(tmpdir(), `kilde-platforms-live-${process.pid}`);
  mkdirSync(tmp, { recursive: true });
  const kildeLog = join(tmp, 'kilde.log');
  const owuiLog = join(tmp, 'open-webui.log');
  try {
    if (process.env.SKIP_BUILD) console.log('dist/ as it is (SKIP_BUILD)');
    else {
      console.log('building dist/ (tsc -b tsconfig.build.json)...');
      execFileSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
    }

    const model = await startFakeOpenAi(decide);
    const kildePort = await freePort();
    const kildeUrl = `http://127.0.0.1:${kildePort}`;
    const kilde = start(
      join(ROOT, 'bin', 'kilde'),
      ['serve', 'all'],
      {
        HOST: '127.0.0.1',
        PORT: String(kildePort),
        API_KEY: MAIN_KEY,
        API_KEYS: JSON.stringify({
          [OWUI_KEY]: { collections: ['eng-docs', 'sales-docs'], name: 'open-webui' },
        }),
        ...(USER_JWT_SECRET ? { USER_ACCESS_JWT_SECRET: USER_JWT_SECRET } : {}),
        USER_ACCESS:
          'trusted_keys: [open-webui]\ngroups:\n  Engineering: [eng-docs]\n  Sales: [sales-docs]\n',
        MCP_SEARCH_COLLECTIONS: 'eng-docs,sales-docs',
        MCP_BEARER_AUTH: 'true',
        LIBRECHAT_JWT_SECRET: LIBRECHAT_SECRET,
        EMBEDDING_PROVIDER: 'none',
        KILDE_DATA_DIR: join(tmp, 'kilde-data'),
        LOG_FORMAT: 'json',
      },
      kildeLog,
    );
    await waitFor(`${kildeUrl}/health`, 'kilde serve all', 120, kilde, kildeLog);
    console.log(`kilde serve all at ${kildeUrl}`);
    const docs: [string, string, string][] = [
      [
        'eng-1',
        'eng-docs',
        `# Engineering handbook\n\nProject ${ENG}: the deploy freeze starts on Friday at 14:00 and rollbacks use the blue-green switch.`,
      ],
      [
        'eng-2',
        'eng-docs',
        `# On-call\n\nProject ${ENG} on-call engineers confirm every deploy freeze in the release channel.`,
      ],
      [
        'sales-1',
        'sales-docs',
        `# Sales playbook\n\nProject ${SALES}: during a deploy freeze, discounts above 20 % need the regional director.`,
      ],
      [
        'sales-2',
        'sales-docs',
        `# Sales calendar\n\nProject ${SALES} quarter close: no deploy freeze exceptions for pricing pages.`,
      ],
    ];
    for (const [fileId, collection, content] of docs) {
      const form = new FormData();
      form.set('file_id', fileId);
      form.set('collection_name', collection);
      form.set('user_id', 'platforms-live');
      form.set('file', new Blob([content], { type: 'text/markdown' }), `${fileId}.md`);
      const res = await fetch(`${kildeUrl}/api/v1/ingest`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${MAIN_KEY}` },
        body: form,
      });
      if (!res.ok) throw new Error(`ingest ${fileId}: ${res.status} ${await res.text()}`);
    }

    if (want('upstream') || want('qdrant')) {
      const owuiPort = await freePort();
      const owuiUrl = `http://127.0.0.1:${owuiPort}`;
      const everyone = [{ principal_type: 'user', principal_id: '*', permission: 'read' }];
      // Group names travel in a header template: Open WebUI's user-info headers carry no groups.
      const userHeaders = { 'X-OpenWebUI-User-Groups': '{{USER_GROUPS}}' };
      const toolServers = [
        {
          type: 'mcp',
          url: `${kildeUrl}/mcp`,
          auth_type: 'bearer',
          key: OWUI_KEY,
          headers: userHeaders,
          config: { enable: true, access_grants: everyone },
          info: { id: 'kilde', name: 'Kilde', description: "Kilde's knowledge search" },
        },
        {
          type: 'openapi',
          url: kildeUrl,
          path: 'openapi.json',
          auth_type: 'bearer',
          key: OWUI_KEY,
          headers: userHeaders,
          config: { enable: true, function_name_filter_list: 'search', access_grants: everyone },
          info: { id: 'kilde-openapi', name: 'Kilde search (OpenAPI)', description: "Kilde's POST /search" },
        },
      ];
      const owui = start(
        join(VENV, 'bin', 'open-webui'),
        ['serve', '--host', '127.0.0.1', '--port', String(owuiPort)],
        {
          ...owuiBaseEnv(join(tmp, 'owui-data'), model),
          CONTENT_EXTRACTION_ENGINE: 'external',
          EXTERNAL_DOCUMENT_LOADER_URL: kildeUrl,
          EXTERNAL_DOCUMENT_LOADER_API_KEY: MAIN_KEY,
          TOOL_SERVER_CONNECTIONS: JSON.stringify(toolServers),
          ENABLE_FORWARD_USER_INFO_HEADERS: 'true',
          ...(USER_JWT_SECRET ? { FORWARD_USER_INFO_HEADER_JWT_SECRET: USER_JWT_SECRET } : {}),
        },
        owuiLog,
      );
      await waitFor(`${owuiUrl}/health`, 'Open WebUI', 600, owui, owuiLog);
      console.log(`Open WebUI ${owuiVersion} at ${owuiUrl}`);

      // An admin (the first sign-up), two users, a group each.
      const anon = new Owui(owuiUrl);
      const admin = anon.as(
        (
          await anon.call<{ token: string }>('POST', '/api/v1/auths/signup', {
            name: 'Admin',
            email: 'admin@example.com',
            password: PASSWORD,
          })
        ).token,
      );
      const users: Record<string, { id: string; api: Owui; group: string; marker: string; other: string }> =
        {};
      for (const [name, group, marker, other] of [
        ['alice', 'Engineering', ENG, SALES],
        ['bob', 'Sales', SALES, ENG],
      ] as const) {
        const email = `${name}@example.com`;
        const added = await admin.call<{ id: string }>('POST', '/api/v1/auths/add', {
          name,
          email,
          password: PASSWORD,
          role: 'user',
        });
        const g = await admin.call<{ id: string }>('POST', '/api/v1/groups/create', {
          name: group,
          description: `${group} team`,
        });
        await admin.call('POST', `/api/v1/groups/id/${g.id}/users/add`, { user_ids: [added.id] });
        const token = (
          await anon.call<{ token: string }>('POST', '/api/v1/auths/signin', { email, password: PASSWORD })
        ).token;
        users[name] = { id: added.id, api: anon.as(token), group, marker, other };
      }

      const screens: { chatId: string; email: string; file: string }[] = [];
      if (want('upstream')) {
        // (a) MCP: each user's turn searches through Kilde as that user.
        for (const [name, u] of Object.entries(users)) {
          try {
            const { chatId, answer } = await chatTurn(u.api, 'What is the deploy freeze policy?', [
              'server:mcp:kilde',
            ]);
            const text = answer.content ?? '';
            // Open WebUI 0.12 makes citation chips only of its built-in knowledge tools' results; a tool
            // server's result is kept with the message (its tool-call panel) and the model cites the
            // `citation` (file, page, headings) of each of Kilde's hits.
            const whole = JSON.stringify(answer);
            const cited = [...new Set(text.match(/(eng|sales)-\d\.md/g) ?? [])];
            const cross = (whole.match(new RegExp(u.other, 'g')) ?? []).length;
            // Kilde's request lines name the user it read from Open WebUI's headers.
            const named = readFileSync(kildeLog, 'utf8')
              .split('\n')
              .filter((l) => l.includes(`"user":"${u.id}"`)).length;
            const via = USER_JWT_SECRET ? 'signed X-OpenWebUI-User-Jwt' : 'X-OpenWebUI-User-Id';
            check(
              `mcp search_knowledge as ${name} (group ${u.group}, ${via})`,
              text.includes(u.marker) && cross === 0 && cited.length > 0 && named > 0,
              `answer has ${u.marker}: ${text.includes(u.marker)}, sources cited: ${cited.join(', ') || 'none'}, cross-user hits (${u.other}): ${cross}, Kilde request lines naming ${name}'s Open WebUI id: ${named}${answer.error ? `, error ${JSON.stringify(answer.error)}` : ''}`,
            );
            screens.push({ chatId, email: `${name}@example.com`, file: `open-webui-mcp-${name}.png` });
          } catch (err) {
            check(`mcp search_knowledge as ${name}`, false, (err as Error).message);
          }
        }

        // (b) OpenAPI: Open WebUI imported Kilde's /openapi.json; its `search` operation is the tool.
        try {
          const alice = users.alice!;
          const { chatId, answer } = await chatTurn(alice.api, 'deploy freeze [collections: eng-docs]', [
            'server:kilde-openapi',
          ]);
          const called = model
            .chatRequests()
            .some((r) => (r.tools ?? []).some((t) => t.function.name === 'search'));
          const text = answer.content ?? '';
          check(
            'openapi tool server: search operation found and called',
            called && text.includes(ENG) && !text.includes(SALES),
            `tool "search" offered to the model: ${called}, answer has ${ENG}: ${text.includes(ENG)}, cross-user hits: ${(text.match(/Borealis/g) ?? []).length}`,
          );
          screens.push({ chatId, email: 'alice@example.com', file: 'open-webui-openapi-alice.png' });
          // Asking for the other group's collection through the same tool: Kilde refuses it (403).
          const { answer: refused } = await chatTurn(alice.api, 'deploy freeze [collections: sales-docs]', [
            'server:kilde-openapi',
          ]);
          check(
            "openapi tool server: another group's collection is refused",
            !(refused.content ?? '').includes(SALES),
            `answer: ${(refused.content ?? '').slice(0, 160).replace(/\s+/g, ' ')}`,
          );
        } catch (err) {
          check('openapi tool server', false, (err as Error).message);
        }

        // (c) The external document loader: Open WebUI's knowledge pipeline, Kilde's extraction.
        try {
          const kb = await admin.call<{ id: string }>('POST', '/api/v1/knowledge/create', {
            name: 'Kilde-extracted',
            description: 'PDF and DOCX through PUT /process',
          });
          for (const file of ['normal_4pages.pdf', 'unit_test_headers.docx']) {
            const form = new FormData();
            const type = file.endsWith('.pdf')
              ? 'application/pdf'
              : 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
            form.set('file', new Blob([readFileSync(join(DOCUMENTS, file))], { type }), file);
            const uploaded = await admin.call<{
              id: string;
              data?: { status?: string; content?: string; error?: string };
            }>('POST', '/api/v1/files/?process=true&process_in_background=false', undefined, form);
            await admin.call('POST', `/api/v1/knowledge/${kb.id}/file/add`, { file_id: uploaded.id });
            const stored = await admin.call<{ data?: { content?: string } }>(
              'GET',
              `/api/v1/files/${uploaded.id}`,
            );
            const content = stored.data?.content ?? '';
            const processed = readFileSync(kildeLog, 'utf8')
              .split('\n')
              .filter((l) => l.includes('"/process"') || l.includes('PUT /process'));
            check(
              `external loader: ${file} through PUT /process`,
              content.length > 100 && processed.length > 0,
              `Open WebUI stored ${content.length} characters; Kilde logged ${processed.length} PUT /process so far`,
            );
          }
          const hits = await admin.call<{ documents: string[][]; metadatas: Record<string, unknown>[][] }>(
            'POST',
            '/api/v1/retrieval/query/collection',
            {
              collection_names: [kb.id],
              query: 'Section',
              k: 10,
            },
          );
          const metas = hits.metadatas[0] ?? [];
          const pages = metas.filter((m) => typeof m.page === 'number').map((m) => m.page);
          check(
            "external loader: the knowledge base answers from Kilde's pages",
            metas.length > 0 && metas.every((m) => m.extraction_engine !== undefined),
            `${metas.length} hits from Open WebUI's own index, extraction_engine on each: ${metas.every((m) => m.extraction_engine !== undefined)}, 0-based PDF pages seen: ${JSON.stringify([...new Set(pages)].sort())}`,
          );
        } catch (err) {
          check('external loader', false, (err as Error).message);
        }
      }

      if (want('qdrant')) {
        try {
          await runQdrant(admin, model, tmp);
        } catch (err) {
          check('External Knowledge (Qdrant)', false, (err as Error).message);
        }
      }

      // Screenshots: the chats as their users see them, Kilde's citations under the answer.
      if (screens.length === 0) {
        // nothing to show (PLATFORMS without upstream)
      } else if (!hasChromium) console.log(`screenshots skipped: ${CHROMIUM} is absent`);
      else {
        mkdirSync(MEDIA, { recursive: true });
        const browser = await launchChromium();
        try {
          for (const s of screens.slice(0, 2)) {
            const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
            // Signed in through the form, as the user would.
            await page.goto(`${owuiUrl}/auth`);
            await page.locator('input[type="email"]').fill(s.email);
            await page.locator('input[type="password"]').fill(PASSWORD);
            await page.getByRole('button', { name: /sign in/i }).click();
            await page.waitForURL((u) => !u.pathname.startsWith('/auth'), { timeout: 60_000 });
            await page.goto(`${owuiUrl}/c/${s.chatId}`);
            await page.waitForLoadState('networkidle').catch(() => undefined);
            await page
              .getByText('From the knowledge base')
              .first()
              .waitFor({ timeout: 60_000 })
              .catch(() => undefined);
            // Unfold the tool call under the answer: Kilde's result, each hit with its citation.
            const toolCall = page.getByText(/search_knowledge|search/).first();
            if (await toolCall.isVisible().catch(() => false)) await toolCall.click().catch(() => undefined);
            await page.waitForTimeout(1500);
            await page
              .getByText('What is the deploy freeze policy?')
              .last()
              .scrollIntoViewIfNeeded()
              .catch(() => undefined);
            await page.screenshot({ path: join(MEDIA, s.file) });
            console.log(`screenshot ${join('media/integrations', s.file)}`);
            await page.close();
          }
        } finally {
          await browser.close();
        }
      }
    }

    if (want('librechat')) {
      try {
        await runLibreChat(kildeUrl, tmp);
      } catch (err) {
        check('LibreChat client', false, (err as Error).message);
      }
    }

    if (want('fork')) {
      try {
        await runFork(kildeUrl, kildeLog, model, tmp);
      } catch (err) {
        check('patched fork', false, (err as Error).message);
      }
    }
  } finally {
    await stopAll();
    if (process.env.KEEP_TMP) console.log(`kept ${tmp} (logs: kilde.log, open-webui.log)`);
    else rmSync(tmp, { recursive: true, force: true });
  }
  const failed = results.filter((r) => !r.ok);
  console.log(
    `test:platforms-live: ${results.length - failed.length} passed, ${failed.length} failed (Open WebUI ${owuiVersion})`,
  );
  writeFileSync(
    join(ROOT, '.tmp', 'platforms-live-last.json'),
    JSON.stringify({ owuiVersion, results }, null, 2),
  );
  process.exit(failed.length > 0 ? 1 : 0);
}

main().catch(async (err) => {
  console.error(`FAIL test:platforms-live: ${(err as Error).message}`);
  await stopAll();
  process.exit(1);
});
