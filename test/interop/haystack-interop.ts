// npm run test:interop: Kilde and the reference ingestion path's own library over one real Qdrant.
//
//   QDRANT_BIN=/path/to/qdrant npm run test:interop     (starts a node itself)
//   QDRANT_URL=http://127.0.0.1:6333 npm run test:interop
//
// 1. Haystack's QdrantDocumentStore (qdrant-haystack, from PyPI, in its own virtual environment
//    under .tmp/) writes a collection in the contracts' layout; Kilde's `/search` over it answers
//    the same hits, in the same order, with the same tenancy and pages as the library's own dense
//    and hybrid queries.
// 2. Kilde ingests files into another collection; the library reads every chunk back and its
//    dense query finds what Kilde's `/search` finds.
// Skipped, saying why, without a Qdrant or without `python3 -m venv`. Both sides embed with the
// same deterministic model (the hash embeddings the test fakes serve) and Kilde's BM25, which is
// bit-compatible with fastembed's `Qdrant/bm25` that the reference pipeline uses.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Bm25Encoder } from '../../src/embed/bm25/encoder.js';
import type { KildeApp } from '../../src/http/app.js';
import { hashEmbedding } from '../fakes/hash-embedding.js';
import { startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type ServeAll, startServeAll } from '../helpers/serve-all.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { type QdrantNodes, startQdrantNodes } from '../live/qdrant-nodes.js';

const VENV = join(import.meta.dirname, '../../.tmp/interop-venv');
const PY = join(VENV, 'bin/python');
const PACKAGES = ['qdrant-haystack==13.1.0', 'haystack-ai==3.4.1'];
const DIM = 32;
const KEY = 'interop-key';
const H = { authorization: `Bearer ${KEY}` };
const bm25 = new Bm25Encoder({ language: 'english' });

function skip(reason: string): never {
  console.log(`test:interop skipped: ${reason}`);
  process.exit(0);
}

function ensureVenv() {
  if (!existsSync(PY)) {
    const made = spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' });
    if (made.status !== 0) skip('`python3 -m venv` is not available here');
  }
  const have = spawnSync(PY, ['-c', 'import haystack_integrations.document_stores.qdrant']);
  if (have.status !== 0) {
    console.log(`installing ${PACKAGES.join(' ')} into ${VENV}`);
    const pip = spawnSync(join(VENV, 'bin/pip'), ['install', '-q', ...PACKAGES], { stdio: 'inherit' });
    if (pip.status !== 0) skip('pip could not install the Haystack packages (no registry?)');
  }
}

interface HaystackDoc {
  id: string;
  content: string;
  meta: Record<string, unknown>;
  score: number | null;
}

function haystack(req: Record<string, unknown>): unknown {
  const run = spawnSync(PY, [join(import.meta.dirname, 'haystack_store.py')], {
    input: JSON.stringify(req),
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`haystack ${String(req.op)} failed:\n${run.stderr.toString('utf8')}`);
  return JSON.parse(run.stdout.toString('utf8'));
}

function kilde(url: string, index: string, embedUrl: string): Promise<ServeAll> {
  return startServeAll(
    {
      API_KEY: KEY,
      VECTORDB_URI: url,
      VECTORDB_INDEX: index,
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: embedUrl,
      EMBEDDING_MODEL: 'hash',
      EMBEDDING_DIM: String(DIM),
      ENABLE_SPARSE_EMBEDDINGS: 'true',
      ENABLE_HYBRID_SEARCH: 'true',
      ENABLE_QUERY_GENERATION: 'false',
      CHUNK_SPLIT_BY: 'word',
      CHUNK_SIZE: '40',
      CHUNK_OVERLAP: '0',
      SMALL_COLLECTION_CHUNKS: '0',
    },
    'kilde-interop-',
  );
}

async function kildeSearch(app: KildeApp, query: string, collection: string, hybrid: boolean) {
  const res = await app.inject({
    method: 'POST',
    url: '/search',
    headers: H,
    payload: { queries: [query], collection_names: [collection], k: 5, pipeline: { hybrid } },
  });
  assert.equal(res.statusCode, 200, res.body);
  const json = res.json() as {
    documents: string[][];
    metadatas: Record<string, unknown>[][];
    distances: number[][];
  };
  return { docs: json.documents[0]!, metas: json.metadatas[0]!, scores: json.distances[0]! };
}

/** Reference-written documents: two tenants, pages, the contract's meta fields. */
const CORPUS: { tenant: string; file: string; page: number; text: string }[] = [
  {
    tenant: 'kbA',
    file: 'pumps',
    page: 1,
    text: 'The pump halts with fault ZQX4411 when the inlet valve is closed.',
  },
  {
    tenant: 'kbA',
    file: 'pumps',
    page: 2,
    text: 'Open the inlet valve and restart the pump to clear fault ZQX4411.',
  },
  {
    tenant: 'kbA',
    file: 'bread',
    page: 1,
    text: 'Danish rye bread is dark and dense, made with sourdough and whole grains.',
  },
  {
    tenant: 'kbA',
    file: 'tax',
    page: 3,
    text: 'Income tax in Denmark is high; municipal and state tax are paid on income.',
  },
  {
    tenant: 'kbB',
    file: 'secret',
    page: 1,
    text: 'The pump in building B has a secret override code ZQX4411 for restart.',
  },
  {
    tenant: 'kbB',
    file: 'bikes',
    page: 1,
    text: 'Bicycle lanes in Copenhagen are wide; cyclists ride all year.',
  },
];
const QUERIES = ['pump fault ZQX4411 restart', 'rye bread sourdough', 'income tax municipal', 'inlet valve'];

let nodes: QdrantNodes | undefined;
const url =
  process.env.QDRANT_URL?.replace(/\/+$/, '') ??
  (process.env.QDRANT_BIN ? undefined : skip('neither QDRANT_URL nor QDRANT_BIN is set (docs/qdrant.md)'));
ensureVenv();
if (!url) nodes = await startQdrantNodes(process.env.QDRANT_BIN ?? '', 1);
const qdrantUrl = url ?? nodes!.urls[0]!;
const embed = await startFakeOpenAIEmbeddings({ dim: DIM });
const stamp = Date.now().toString(36);
const written = `interop_haystack_${stamp}`;
const kildeWritten = `interop_kilde_${stamp}`;
let failures = 0;
const check = (what: string, fn: () => void) => {
  try {
    fn();
    console.log(`  ok   ${what}`);
  } catch (err) {
    failures++;
    console.log(`  FAIL ${what}: ${(err as Error).message.split('\n')[0]}`);
  }
};

try {
  console.log(
    `Qdrant ${((await (await fetch(`${qdrantUrl}/`)).json()) as { version: string }).version} at ${qdrantUrl}; ${PACKAGES.join(', ')}`,
  );
  // 1. The reference library writes; Kilde reads.
  haystack({
    op: 'write',
    url: qdrantUrl,
    index: written,
    dim: DIM,
    docs: CORPUS.map((d, i) => ({
      id: `${d.file}-${i}`,
      content: d.text,
      meta: {
        collection_name: d.tenant,
        collection_type: 'knowledge',
        file_id: d.file,
        ingest_version: 'haystack-1',
        split_id: i,
        name: `${d.file}.pdf`,
        source: `${d.file}.pdf`,
        page_number: d.page,
      },
      embedding: hashEmbedding(`passage: ${d.text}`, DIM),
      sparse: bm25.encodeDocument(d.text),
    })),
  });
  const reader = await kilde(qdrantUrl, written, embed.baseUrl);
  console.log('\nA collection written by Haystack, searched by Kilde:');
  for (const q of QUERIES) {
    const ref = haystack({
      op: 'query',
      url: qdrantUrl,
      index: written,
      dim: DIM,
      collection: 'kbA',
      top_k: 5,
      embedding: hashEmbedding(`query: ${q}`, DIM),
    }) as HaystackDoc[];
    const k = await kildeSearch(reader.app, q, 'kbA', false);
    check(`dense "${q}": same hits in the same order (${ref.length})`, () =>
      assert.deepEqual(
        k.docs,
        ref.map((d) => d.content),
      ),
    );
    check(`dense "${q}": Kilde's score is the library's cosine mapped to [0, 1] ((s + 1) / 2)`, () => {
      for (const [i, s] of k.scores.entries()) {
        assert.ok(Math.abs(s - ((ref[i]!.score ?? 0) + 1) / 2) < 1e-5, `${s} vs ${ref[i]!.score}`);
      }
    });
    check(`dense "${q}": tenancy (no kbB text) and pages kept`, () => {
      assert.ok(k.metas.every((m) => m.collection_name === 'kbA'));
      assert.deepEqual(
        k.metas.map((m) => m.page_number),
        ref.map((d) => d.meta.page_number),
      );
    });
    const refHybrid = haystack({
      op: 'hybrid',
      url: qdrantUrl,
      index: written,
      dim: DIM,
      collection: 'kbA',
      top_k: 5,
      embedding: hashEmbedding(`query: ${q}`, DIM),
      sparse: bm25.encodeQuery(q),
    }) as HaystackDoc[];
    const kh = await kildeSearch(reader.app, q, 'kbA', true);
    check(`hybrid "${q}": same first hit as the library's RRF query`, () =>
      assert.equal(kh.docs[0], refHybrid[0]?.content),
    );
  }
  await reader.close();

  // 2. Kilde writes; the reference library reads.
  const writer = await kilde(qdrantUrl, kildeWritten, embed.baseUrl);
  const chunks = new Map<string, number>();
  for (const d of CORPUS) {
    const fileId = `${d.tenant}-${d.file}-${d.page}`;
    const { body, headers } = multipartBody(
      { file_id: fileId, filename: `${d.file}.txt`, collection_name: d.tenant, user_id: 'u' },
      { name: `${d.file}.txt`, content: d.text, type: 'text/plain' },
    );
    const res = await writer.app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...H, ...headers },
      payload: body,
    });
    assert.equal(res.statusCode, 200, res.body);
    chunks.set(d.tenant, (chunks.get(d.tenant) ?? 0) + (res.json() as { chunks_count: number }).chunks_count);
  }
  console.log('\nA collection written by Kilde, read by Haystack:');
  for (const tenant of ['kbA', 'kbB']) {
    const read = haystack({
      op: 'read',
      url: qdrantUrl,
      index: kildeWritten,
      dim: DIM,
      collection: tenant,
    }) as HaystackDoc[];
    check(`${tenant}: the library reads every chunk Kilde wrote (${chunks.get(tenant)})`, () => {
      assert.equal(read.length, chunks.get(tenant));
      const texts = CORPUS.filter((d) => d.tenant === tenant)
        .map((d) => d.text)
        .sort();
      assert.deepEqual(read.map((d) => d.content).sort(), texts);
      assert.ok(
        read.every((d) => d.meta.collection_name === tenant && typeof d.meta.ingest_version === 'string'),
      );
    });
  }
  for (const q of QUERIES) {
    const ref = haystack({
      op: 'query',
      url: qdrantUrl,
      index: kildeWritten,
      dim: DIM,
      collection: 'kbA',
      top_k: 5,
      embedding: hashEmbedding(`query: ${q}`, DIM),
    }) as HaystackDoc[];
    const k = await kildeSearch(writer.app, q, 'kbA', false);
    check(`"${q}": the library's dense query and Kilde's /search agree`, () =>
      assert.deepEqual(
        k.docs,
        ref.map((d) => d.content),
      ),
    );
  }
  await writer.close();
} finally {
  for (const c of [written, kildeWritten])
    await fetch(`${qdrantUrl}/collections/${c}`, { method: 'DELETE' }).catch(() => undefined);
  await embed.close();
  await nodes?.close();
}
console.log(failures === 0 ? '\ninterop: all checks passed' : `\ninterop: ${failures} checks failed`);
process.exit(failures === 0 ? 0 : 1);
