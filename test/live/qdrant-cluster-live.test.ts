import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type ServeAll, startServeAll } from '../helpers/serve-all.js';
import { multipartBody } from '../ingest/helpers/harness.js';
import { type QdrantNodes, startQdrantNodes } from './qdrant-nodes.js';

/**
 * Kilde on a real three-node Qdrant cluster (Qdrant's distributed mode on loopback, started from
 * `QDRANT_BIN`; `npm run test:qdrant-live` sets it). The collection has three shards and three
 * replicas, writes wait for two of them (`write_consistency_factor` 2, `ordering=medium`) and reads
 * ask a majority of the replicas (`consistency=quorum`; `majority` asks them all): the policy of docs/scaling.md that keeps both reads and
 * writes available with one node gone. Kilde A (ingest + search) talks to node 0, Kilde B (search)
 * to node 1; node 2 is the one that dies.
 *
 * - read-your-writes: every version acknowledged by A is what B finds next, never the one before;
 * - a node SIGKILLed during ingests and searches: any failure names the index (503/502), searches
 *   and ingests answer again while the node is still down, every acknowledged ingest is the live
 *   version afterwards, no partial version is ever searchable, and after the node returns every
 *   shard's replicas converge to the same points.
 */
const bin = process.env.QDRANT_BIN;
const KEY = 'cluster-key';
const H = { authorization: `Bearer ${KEY}` };
const DIM = 16;
const COLLECTION = `kilde_cluster_${Date.now().toString(36)}`;
const FILES = 9;

type Kilde = ServeAll;

let nodes: QdrantNodes;
let embed: FakeEmbeddingsServer;
let a: Kilde;
let b: Kilde;

function kilde(url: string): Promise<Kilde> {
  return startServeAll(
    {
      API_KEY: KEY,
      VECTORDB_URI: url,
      VECTORDB_INDEX: COLLECTION,
      EMBEDDING_PROVIDER: 'http-compat',
      EMBEDDING_API_BASE_URL: embed.baseUrl,
      EMBEDDING_MODEL: 'hash',
      EMBEDDING_DIM: String(DIM),
      ENABLE_SPARSE_EMBEDDINGS: 'true',
      ENABLE_HYBRID_SEARCH: 'true',
      CHUNK_SPLIT_BY: 'word',
      CHUNK_SIZE: '12',
      CHUNK_OVERLAP: '0',
      QDRANT_SHARD_NUMBER: '3',
      QDRANT_REPLICATION_FACTOR: '3',
      QDRANT_WRITE_CONSISTENCY_FACTOR: '2',
      // `strong` routes every write through a shard's permanent leader: with that node gone, no
      // write succeeds (seen on 1.18.3). `medium` elects another.
      QDRANT_WRITE_ORDERING: 'medium',
      QDRANT_READ_CONSISTENCY: 'quorum',
    },
    'kilde-cluster-',
  );
}

/** A text of several chunks, each carrying the version's marker word. */
const textOf = (file: number, marker: string) =>
  Array.from(
    { length: 4 },
    (_, i) => `Section ${i} of file${file} says ${marker} and repeats ${marker} for the reader.`,
  ).join('\n\n');

async function ingest(k: Kilde, file: number, marker: string) {
  const { body, headers } = multipartBody(
    { file_id: `f${file}`, filename: `f${file}.txt`, collection_name: 'kb', user_id: 'u' },
    { name: `f${file}.txt`, content: textOf(file, marker), type: 'text/plain' },
  );
  const res = await k.app.inject({
    method: 'PUT',
    url: '/api/v1/ingest',
    headers: { ...H, ...headers },
    payload: body,
  });
  return { status: res.statusCode, json: res.json() as { chunks_count?: number; code?: string } };
}

async function search(k: Kilde, query: string, extra: Record<string, unknown> = {}) {
  const res = await k.app.inject({
    method: 'POST',
    url: '/search',
    headers: H,
    payload: { queries: [query], collection_names: ['kb'], k: 20, ...extra },
  });
  const json = res.json() as {
    documents?: string[][];
    metadatas?: Record<string, unknown>[][];
    code?: string;
  };
  return { status: res.statusCode, json };
}

/** Distinct `ingest_version`s of a file visible to a search on `k` (its marker words or not). */
async function liveVersions(k: Kilde, file: number) {
  const r = await search(k, `file${file} section`, { filter: { file_ids: [`f${file}`] }, k: 50 });
  expect(r.status).toBe(200);
  return new Set((r.json.metadatas?.[0] ?? []).map((m) => m.ingest_version));
}

async function clusterInfo(url: string) {
  const res = await fetch(`${url}/collections/${COLLECTION}/cluster`);
  return (await res.json()) as {
    result: {
      local_shards: { shard_id: number; points_count: number; state: string }[];
      remote_shards: { shard_id: number; state: string }[];
      shard_transfers: unknown[];
    };
  };
}

describe.skipIf(!bin)('a three-node Qdrant cluster', { timeout: 600_000 }, () => {
  beforeAll(async () => {
    embed = await startFakeOpenAIEmbeddings({ dim: DIM });
    nodes = await startQdrantNodes(bin ?? '', 3);
    a = await kilde(nodes.urls[0]!);
    b = await kilde(nodes.urls[1]!);
  }, 300_000);

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await nodes?.close();
    await embed?.close();
  });

  it('creates the collection with the configured shards and replicas on every node', async () => {
    expect((await ingest(a, 0, 'genesis')).status).toBe(200);
    let replicas = 0;
    for (const url of nodes.urls) {
      const info = (await clusterInfo(url)).result;
      replicas += info.local_shards.length;
      for (const s of info.local_shards) expect(s.state).toBe('Active');
    }
    expect(replicas).toBe(9); // 3 shards × 3 replicas
  });

  it('read-your-writes: what A acknowledged is what B finds next, never the version before', async () => {
    for (let v = 1; v <= 15; v++) {
      const file = v % FILES;
      const res = await ingest(a, file, `marker${v}x`);
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      const found = await search(b, `marker${v}x`, { filter: { file_ids: [`f${file}`] } });
      expect(found.status).toBe(200);
      expect(found.json.documents?.[0]?.join(' ')).toContain(`marker${v}x`);
      expect(await liveVersions(b, file)).toHaveProperty('size', 1);
    }
  });

  it('a node killed during ingests and searches: no acknowledged write lost, no partial version, convergence after', async () => {
    for (let f = 0; f < FILES; f++) expect((await ingest(a, f, `base${f}y`)).status).toBe(200);
    const acked = new Map<number, { marker: string; chunks: number }>();
    const outcomes = { ingest: new Map<string, number>(), search: new Map<string, number>() };
    const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
    // Printed for docs/scaling.md, never asserted: search latency before and while the node is down.
    const latency: Record<'up' | 'down', number[]> = { up: [], down: [] };
    // The last rounds while the node is down: by then the cluster has noticed, and everything answers.
    const settled: string[] = [];
    for (let op = 0; op < 60; op++) {
      if (op === 15) await nodes.kill(2);
      const file = op % FILES;
      const marker = `round${op}z`;
      const res = await ingest(a, file, marker);
      bump(outcomes.ingest, res.status === 200 ? '200' : `${res.status} ${res.json.code}`);
      if (res.status === 200) acked.set(file, { marker, chunks: res.json.chunks_count ?? -1 });
      else expect(res.json.code, JSON.stringify(res.json)).toMatch(/VECTORDB|INDEX|DELETE|LOCK/);
      if (op >= 45) settled.push(`ingest ${res.status}`);
      for (const k of [a, b]) {
        const t = performance.now();
        const s = await search(k, `file${(op * 7) % FILES} section reader`);
        latency[op < 15 ? 'up' : 'down'].push(performance.now() - t);
        bump(outcomes.search, s.status === 200 ? '200' : `${s.status} ${s.json.code}`);
        if (s.status !== 200) expect(s.json.code, JSON.stringify(s.json)).toMatch(/VECTORDB|INDEX/);
        if (op >= 45) settled.push(`search ${s.status}`);
      }
    }
    const p = (xs: number[], q: number) =>
      [...xs].sort((x, y) => x - y)[Math.ceil((q / 100) * xs.length) - 1];
    console.log('node 2 killed after 15 of 60 rounds:', {
      ingest: Object.fromEntries(outcomes.ingest),
      search: Object.fromEntries(outcomes.search),
      searchMs: Object.fromEntries(
        Object.entries(latency).map(([k, xs]) => [
          k,
          { p50: p(xs, 50)?.toFixed(1), p99: p(xs, 99)?.toFixed(1) },
        ]),
      ),
    });

    expect(
      settled.filter((o) => !o.endsWith(' 200')),
      'rounds 45-59, node 2 still down',
    ).toEqual([]);

    // Exactly one whole version per file, the last acknowledged one: checked while the node is
    // down and after it returns.
    const checkVersions = async (k: Kilde, whileDown: boolean) => {
      for (let f = 0; f < FILES; f++) {
        const probe = await search(k, `file${f} section`, { filter: { file_ids: [`f${f}`] }, k: 50 });
        if (whileDown && probe.status !== 200) {
          expect(probe.json.code).toBe('VECTORDB_FAILED');
          continue;
        }
        expect(await liveVersions(k, f)).toHaveProperty('size', 1);
        const last = acked.get(f);
        if (!last) continue;
        const r = await search(k, `${last.marker} file${f}`, { filter: { file_ids: [`f${f}`] }, k: 50 });
        const docs = r.json.documents?.[0] ?? [];
        expect(docs.filter((d) => d.includes(last.marker))).toHaveLength(last.chunks);
      }
    };
    await checkVersions(b, true);

    await nodes.restart(2);
    // Converged: no transfer left, every replica active, replicas of one shard hold the same points.
    let converged = false;
    for (let i = 0; i < 600 && !converged; i++) {
      const infos = await Promise.all(nodes.urls.map(clusterInfo));
      const shards = new Map<number, number[]>();
      let active = true;
      for (const info of infos) {
        if (info.result.shard_transfers.length > 0) active = false;
        for (const s of info.result.local_shards) {
          if (s.state !== 'Active') active = false;
          shards.set(s.shard_id, [...(shards.get(s.shard_id) ?? []), s.points_count]);
        }
      }
      converged =
        active &&
        [...shards.values()].every((counts) => counts.length === 3 && counts.every((n) => n === counts[0]));
      if (!converged) await new Promise((r) => setTimeout(r, 500));
    }
    expect(converged).toBe(true);
    await checkVersions(b, false);
    // And the returned node serves the same answers.
    const c = await kilde(nodes.urls[2]!);
    try {
      for (let f = 0; f < FILES; f++) {
        expect(await liveVersions(c, f)).toEqual(await liveVersions(b, f));
      }
    } finally {
      await c.close();
    }
  });
});
