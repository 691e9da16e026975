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
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOCUMENTS } from '../test/fixtures/index.js';
import { CHROMIUM, hasChromium, launchChromium } from '../test/helpers/browser.js';
import {
  type ChatRequest,
  type Decision,
  EMBEDDING_MODEL,
  MODEL_ID,
  startFakeOpenAi,
  textOf,
} from '../test/live/fake-openai-streaming.js';

const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
const VENV = join(ROOT, '.tmp', 'owui-venv');
const PY = join(VENV, 'bin', 'python');
const SPEC = process.env.OWUI_SPEC ?? 'open-webui==0.12.*';
const MEDIA = join(ROOT, 'media', 'integrations');

const MAIN_KEY = 'platforms-live-main-key-0123456789';
const OWUI_KEY = 'platforms-live-open-webui-key-0123456789';
const PASSWORD = 'Kilde-live-test-1!';

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
async function chatTurn(api: Owui, question: string, toolIds: string[]) {
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
  return { text: `No tool was offered (tools: ${tools.join(', ') || 'none'}).` };
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
    console.log('building dist/ (tsc -b tsconfig.build.json)...');
    execFileSync('npx', ['tsc', '-b', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });

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
        USER_ACCESS:
          'trusted_keys: [open-webui]\ngroups:\n  Engineering: [eng-docs]\n  Sales: [sales-docs]\n',
        MCP_SEARCH_COLLECTIONS: 'eng-docs,sales-docs',
        MCP_BEARER_AUTH: 'true',
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
        DATA_DIR: join(tmp, 'owui-data'),
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
        CONTENT_EXTRACTION_ENGINE: 'external',
        EXTERNAL_DOCUMENT_LOADER_URL: kildeUrl,
        EXTERNAL_DOCUMENT_LOADER_API_KEY: MAIN_KEY,
        TOOL_SERVER_CONNECTIONS: JSON.stringify(toolServers),
        ENABLE_FORWARD_USER_INFO_HEADERS: 'true',
        ENABLE_TITLE_GENERATION: 'false',
        ENABLE_TAGS_GENERATION: 'false',
        ENABLE_FOLLOW_UP_GENERATION: 'false',
        ENABLE_AUTOCOMPLETE_GENERATION: 'false',
        ENABLE_RETRIEVAL_QUERY_GENERATION: 'false',
        ENABLE_CODE_INTERPRETER: 'false',
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
    const users: Record<string, { id: string; api: Owui; group: string; marker: string; other: string }> = {};
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

    // (a) MCP: each user's turn searches through Kilde as that user.
    const screens: { chatId: string; email: string; file: string }[] = [];
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
        check(
          `mcp search_knowledge as ${name} (group ${u.group})`,
          text.includes(u.marker) && cross === 0 && cited.length > 0,
          `answer has ${u.marker}: ${text.includes(u.marker)}, sources cited: ${cited.join(', ') || 'none'}, cross-user hits (${u.other}): ${cross}${answer.error ? `, error ${JSON.stringify(answer.error)}` : ''}`,
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

    // Screenshots: the chats as their users see them, Kilde's citations under the answer.
    if (!hasChromium) console.log(`screenshots skipped: ${CHROMIUM} is absent`);
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
