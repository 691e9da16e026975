import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_COLLECTION } from '../../src/index/contract.js';
import type { VectorIndex } from '../../src/index/store.js';
import { leaseKeys } from '../../src/ingest/redis-lock.js';
import { fenceOf } from '../../src/versions/ledger.js';
import type { Server } from '../cli/helpers.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type QdrantFake, startQdrantFake } from '../fakes/qdrant-server.js';
import { AUTH } from '../helpers/app.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { openQdrant } from '../index/qdrant-target.js';
import { multipartBody, pointsOf, versionsOf } from '../ingest/helpers/harness.js';
import { processEnv, startProcess } from './processes.js';

/**
 * Issue 14's proof on one machine: three real `kilde serve ingest` processes, one real
 * `redis-server`, one index (the OpenAPI-checking Qdrant fake, shared over HTTP), one embedding
 * server. Concurrent re-ingests of one file_id spread over the replicas leave exactly one version;
 * a replica killed while it holds the lease frees it by expiry and the next ingest leaves one version.
 */
const REPLICAS = 3;
const ROUNDS = 30;
const LEASE_MS = 8000;

let redis: RedisServer;
let qdrant: QdrantFake;
let embed: FakeEmbeddingsServer;
let index: VectorIndex;
let dataDir: string;
const replicas: { server: Server; url: string }[] = [];

async function startReplica(i: number) {
  const shared = { dataDir, qdrantUrl: qdrant.url, embedBaseUrl: embed.baseUrl, redisUrl: redis.url };
  return startProcess(
    ['serve', 'ingest'],
    processEnv(shared, `replica-${i}`, { LOCK_LEASE_MS: String(LEASE_MS) }),
  );
}

function put(url: string, fileId: string, text: string, signal?: AbortSignal) {
  const { body, headers } = multipartBody(
    { file_id: fileId, filename: `${fileId}.txt`, collection_name: 'shared', user_id: 'u1' },
    { name: `${fileId}.txt`, content: text, type: 'text/plain' },
  );
  return fetch(`${url}/api/v1/ingest`, {
    method: 'PUT',
    headers: { ...AUTH, ...headers },
    body: new Uint8Array(body),
    ...(signal ? { signal } : {}),
  });
}

/** Bounded polling (attempts, not a clock). */
async function until(check: () => boolean | Promise<boolean>, what: string) {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never happened: ${what}`);
}

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('three ingest replicas on one Redis and one index'),
  () => {
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'kilde-replicas-'));
      [redis, qdrant, embed] = await Promise.all([
        startRedis(),
        startQdrantFake(),
        startFakeOpenAIEmbeddings({ dim: 16 }),
      ]);
      // One after another: the first creates the collection, the others find it.
      for (let i = 0; i < REPLICAS; i++) replicas.push(await startReplica(i));
      index = openQdrant(
        { url: qdrant.url, violations: () => qdrant.violations },
        { collection: DEFAULT_COLLECTION },
      );
    }, 180_000);

    afterAll(async () => {
      await Promise.all(replicas.map((r) => r.server.stop()));
      await Promise.all([redis?.stop(), qdrant?.close(), embed?.close()]);
      await rm(dataDir, { recursive: true, force: true });
    });

    it(`${REPLICAS} replicas × ${ROUNDS} concurrent re-ingests of one file_id leave exactly one version`, async () => {
      const answers = await Promise.all(
        Array.from({ length: ROUNDS }, (_, i) =>
          put(
            replicas[i % REPLICAS]!.url,
            'contested',
            `Round ${i}. The grey heron stands in the marsh. It waits for fish near the reeds at dawn.`,
          ),
        ),
      );
      const bodies = await Promise.all(
        answers.map(async (r) => ({ status: r.status, body: await r.text() })),
      );
      const lost = replicas.flatMap((r) => r.server.output.split('\n').filter((l) => /lease/.test(l)));
      expect(
        bodies.filter((b) => b.status !== 200),
        lost.join('\n'),
      ).toEqual([]);

      const points = await pointsOf(index, 'contested');
      const versions = versionsOf(points);
      expect(versions).toHaveLength(1);
      // Every lease was taken in turn; the last one's version (the highest fence) is the one left.
      const keys = leaseKeys('contested');
      const [last, leases, claimed] = await redis.client.hmget(keys.state, 'next', 'leases', 'c:shared');
      expect(String(fenceOf(versions[0]!))).toBe(last);
      expect(leases).toBe(String(ROUNDS));
      expect(claimed).toBe(last);
      expect(new Set(points.map((p) => p.id)).size).toBe(points.length);
      expect(points.map((p) => p.meta.split_id)).toEqual(points.map((_, i) => i));
      const chunks = (JSON.parse(bodies.at(-1)!.body) as { chunks_count: number }).chunks_count;
      expect(points).toHaveLength(chunks);

      expect(await redis.client.exists(keys.lock)).toBe(0);
      expect(qdrant.violations).toEqual([]);
    }, 180_000);

    it('a replica killed (SIGKILL) while it holds the lease frees it by expiry; another ingests, one version', async () => {
      const keys = leaseKeys('orphaned');
      // The victim's embedding call hangs: it holds the lease, mid-ingest, when it dies.
      embed.faults.push({ kind: 'slow', delayMs: 10_000 });
      const before = embed.embeddingRequests().length;
      const victim = replicas[0]!;
      const aborted = new AbortController();
      const doomed = put(
        victim.url,
        'orphaned',
        'The otter dives for crayfish among the reeds.',
        aborted.signal,
      ).catch((err: unknown) => err);
      await until(() => embed.embeddingRequests().length > before, 'the victim embeds under the lease');
      const holder = await redis.client.get(keys.lock);
      expect(holder).not.toBeNull();
      victim.server.child.kill('SIGKILL');
      await victim.server.stop();
      aborted.abort();
      await doomed;
      // The lease outlives its holder until Redis's TTL runs out: nobody renews it any more.
      expect(await redis.client.get(keys.lock)).toBe(holder);

      const res = await put(replicas[1]!.url, 'orphaned', 'The otter slides down the bank and swims away.');
      expect(res.status, await res.clone().text()).toBe(200);
      const points = await pointsOf(index, 'orphaned');
      expect(versionsOf(points)).toHaveLength(1);
      expect(await redis.client.hget(keys.state, 'leases')).toBe('2');
      expect(String(fenceOf(versionsOf(points)[0]!))).toBe(await redis.client.hget(keys.state, 'next'));
      expect(points.map((p) => p.content).join(' ')).toContain('slides');
      expect(await redis.client.exists(keys.lock)).toBe(0);
      expect(qdrant.violations).toEqual([]);
    }, 120_000);

    it('Redis restarted (its data lost): ingests answer 503 LOCK_FAILED while it is down, then one version again', async () => {
      const port = redis.port;
      await redis.stop();
      const down = await put(replicas[1]!.url, 'contested', 'Written while Redis is down.');
      expect(down.status).toBe(503);
      expect(await down.text()).toContain('LOCK_FAILED');

      redis = await startRedis(port);
      // The replicas reconnect by themselves; bounded by attempts.
      await until(async () => {
        const res = await put(
          replicas[2]!.url,
          'contested',
          'After the restart the heron returns to the marsh.',
        );
        return res.status === 200;
      }, 'an ingest succeeds after the restart');
      // Fences outgrow the lost counter (they follow Redis's clock), so the new version retired the old one.
      const points = await pointsOf(index, 'contested');
      expect(versionsOf(points)).toHaveLength(1);
      expect(points.map((p) => p.content).join(' ')).toContain('restart');
      expect(await redis.client.hget(leaseKeys('contested').state, 'leases')).toBe('1');
      expect(qdrant.violations).toEqual([]);
    }, 120_000);
  },
);
