import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { KildeError } from '../../src/errors.js';
import { type IndexPoint, pointId } from '../../src/index/contract.js';
import type { Lease } from '../../src/ingest/lock.js';
import { leaseKeys, RedisFileLock } from '../../src/ingest/redis-lock.js';
import { fencedVersion, fenceOf, newIngestVersion } from '../../src/versions/ledger.js';
import { retireFenced } from '../../src/versions/retire.js';
import { AUTH } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { eventually } from '../helpers/eventually.js';
import { REDIS_SERVER_MISSING, type RedisServer, redisSuite, startRedis } from '../helpers/redis.js';
import { type Harness, multipartBody, pointsOf, startIngest, versionsOf } from './helpers/harness.js';

const log = pino({ level: 'silent' });
let redis: RedisServer;
let prefixSeq = 0;

function lockOn(clock = new ManualClock({ autoSleep: true }), leaseMs = 60_000) {
  const prefix = `t${++prefixSeq}`;
  const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  return { lock: new RedisFileLock(client, { leaseMs, retryMs: 20, clock, log, prefix }), prefix, clock };
}

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('per-file_id lease on a real redis-server'),
  () => {
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it('holds a token with an expiry while fn runs, counts fences, and deletes only its own token', async () => {
      const { lock, prefix } = lockOn();
      const keys = leaseKeys('doc-1', prefix);
      const fences: number[] = [];
      await lock.run('doc-1', async (lease) => {
        fences.push(lease.fence ?? -1);
        expect(await redis.client.get(keys.lock)).toMatch(/^[0-9a-f]{32}$/);
        expect(await redis.client.pttl(keys.lock)).toBeGreaterThan(0);
      });
      expect(await redis.client.exists(keys.lock)).toBe(0);
      await lock.run('doc-1', async (lease) => {
        fences.push(lease.fence ?? -1);
        // Someone else's lease now (ours expired and another replica took it): release leaves it.
        await redis.client.set(keys.lock, 'another-holder');
      });
      expect(fences[1]).toBeGreaterThan(fences[0]!);
      expect(await redis.client.get(keys.lock)).toBe('another-holder');
      expect(await redis.client.hget(keys.state, 'next')).toBe(String(fences[1]));
      expect(await redis.client.hget(keys.state, 'leases')).toBe('2');
      await lock.close();
    });

    it('renews the lease on the Clock while the holder runs', async () => {
      const clock = new ManualClock();
      const { lock, prefix } = lockOn(clock, 60_000);
      const keys = leaseKeys('doc-renew', prefix);
      await lock.run('doc-renew', async () => {
        await redis.client.pexpire(keys.lock, 5_000);
        clock.advance(20_000); // a third of the lease: the renewal runs
        await eventually(async () => (await redis.client.pttl(keys.lock)) > 5_000);
      });
      await lock.close();
    });

    it('a holder whose lease expired learns it: assertHeld fails with LOCK_FAILED', async () => {
      const clock = new ManualClock();
      const { lock, prefix } = lockOn(clock);
      const keys = leaseKeys('doc-lost', prefix);
      const err = await lock
        .run('doc-lost', async (lease) => {
          await redis.client.del(keys.lock); // Redis's TTL ran out
          clock.advance(20_000);
          await lease.assertHeld();
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KildeError);
      expect((err as KildeError).code).toBe('LOCK_FAILED');
      expect((err as KildeError).statusCode).toBe(503);
      await lock.close();
    });

    it('two replicas (two clients) take turns on one file_id; other file_ids do not wait', async () => {
      const a = lockOn(undefined);
      const b = new RedisFileLock(new Redis(redis.url), {
        leaseMs: 60_000,
        retryMs: 20,
        clock: systemClock,
        log,
        prefix: a.prefix,
      });
      const events: string[] = [];
      let releaseA!: () => void;
      const gate = new Promise<void>((r) => {
        releaseA = r;
      });
      let aHolds!: () => void;
      const aHeld = new Promise<void>((r) => {
        aHolds = r;
      });
      const first = a.lock.run('shared', async () => {
        events.push('a:start');
        aHolds();
        await gate;
        events.push('a:end');
      });
      await aHeld;
      const second = b.run('shared', async () => {
        events.push('b:start');
      });
      await b.run('other', async () => {
        events.push('b:other');
      });
      releaseA();
      await Promise.all([first, second]);
      expect(events).toEqual(['a:start', 'b:other', 'a:end', 'b:start']);
      await Promise.all([a.lock.close(), b.close()]);
    });

    it('fails with LOCK_FAILED, not a hang, when Redis is unreachable', async () => {
      const client = new Redis({
        port: 1,
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
      });
      client.on('error', () => {});
      const lock = new RedisFileLock(client, { leaseMs: 60_000, retryMs: 20, clock: systemClock, log });
      const err = await lock.run('x', async () => 'ran').catch((e: unknown) => e);
      expect((err as KildeError).code).toBe('LOCK_FAILED');
      client.disconnect();
    });
  },
);

describe('fenced versions', () => {
  it('carry their fence; unfenced versions count as older than any fenced one', () => {
    expect(fencedVersion(42)).toMatch(/^000000000000002a\.[0-9a-f]{16}$/);
    expect(fenceOf(fencedVersion(42))).toBe(42);
    expect(fenceOf(newIngestVersion())).toBe(0);
  });

  let h: Harness;
  beforeAll(async () => {
    h = await startIngest();
  });
  afterAll(async () => {
    await h?.close();
  });

  function version(fileId: string, v: string, n = 2): IndexPoint[] {
    return Array.from({ length: n }, (_, i) => ({
      id: pointId(fileId, v, i),
      content: `chunk ${i} of ${v}`,
      meta: {
        collection_name: 'c',
        collection_type: 'knowledge',
        file_id: fileId,
        ingest_version: v,
        split_id: i,
      },
    }));
  }
  const lease = (fence: number, newest: number): Lease & { fence: number } => ({
    fence,
    assertHeld: () => Promise.resolve(),
    claim: () => Promise.resolve(newest),
  });

  it('retire only lower fences: a stale holder never removes a newer version, even one still being written', async () => {
    const [v5, v7, legacy] = [fencedVersion(5), fencedVersion(7), newIngestVersion()];
    await h.index.upsert([...version('f1', legacy), ...version('f1', v5), ...version('f1', v7)]);
    // Holder 5's lease expired; 7 is still writing (has not claimed): 5 retires only the legacy one.
    const out = await retireFenced(
      h.index,
      { fileId: 'f1', collectionName: 'c', version: v5 },
      lease(5, 5),
      log,
    );
    expect(out).toEqual({ retired: 2, superseded: false });
    expect(new Set(versionsOf(await pointsOf(h.index, 'f1')))).toEqual(new Set([v5, v7]));
    // 7 finishes: it retires 5.
    await retireFenced(h.index, { fileId: 'f1', collectionName: 'c', version: v7 }, lease(7, 7), log);
    expect(versionsOf(await pointsOf(h.index, 'f1'))).toEqual([v7]);
  });

  it('a holder that finds a newer claim removes its own version and leaves the newer one', async () => {
    const [v3, v4] = [fencedVersion(3), fencedVersion(4)];
    await h.index.upsert([...version('f2', v4), ...version('f2', v3)]);
    const out = await retireFenced(
      h.index,
      { fileId: 'f2', collectionName: 'c', version: v3 },
      lease(3, 4),
      log,
    );
    expect(out.superseded).toBe(true);
    expect(versionsOf(await pointsOf(h.index, 'f2'))).toEqual([v4]);
    expect(await pointsOf(h.index, 'f2')).toHaveLength(2);
  });
});

describe.skipIf(REDIS_SERVER_MISSING !== undefined)(
  redisSuite('two ingest parts sharing Redis and one index'),
  () => {
    let a: Harness;
    let b: Harness;
    beforeAll(async () => {
      redis = await startRedis();
      a = await startIngest({ REDIS_URL: redis.url });
      // The same LanceDB directory, a second service: a second replica in this process.
      b = await startIngest({ REDIS_URL: redis.url }, { dataDir: a.dataDir });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      await redis?.stop();
    });

    const target = {
      fileId: 'stale',
      collectionName: 'c',
      collectionType: 'knowledge',
      filename: 'stale.txt',
      source: 'stale.txt',
      userId: 'u1',
      overwrite: true,
    };
    let seq = 0;
    const text = async (s: string) => {
      const path = join(a.dataDir, `source-${++seq}.txt`);
      await writeFile(path, s);
      return { path, filename: 'stale.txt', mimeType: 'text/plain', bytes: s.length };
    };

    it('a holder whose lease expires mid-ingest writes nothing (503 LOCK_FAILED); the newer holder keeps its version', async () => {
      const keys = leaseKeys('stale');
      const bResult = { version: '' };
      const err = await a.part
        .pipeline()
        .service.ingest(target, async () => {
          // A stalls past its lease: Redis drops it, B takes the file and ingests it whole.
          await redis.client.del(keys.lock);
          const out = await b.part.pipeline().service.ingest(target, () => text('Newer herons.'));
          bResult.version = out.ingestVersion;
          return text('Stale herons.');
        })
        .catch((e: unknown) => e);
      expect((err as KildeError).code).toBe('LOCK_FAILED');
      // Read through B's connection: it wrote last (another LanceDB connection sees it only later).
      const points = await pointsOf(b.index, 'stale');
      expect(versionsOf(points)).toEqual([bResult.version]);
      expect(String(fenceOf(bResult.version))).toBe(await redis.client.hget(keys.state, 'next'));
      expect(points.map((p) => p.content).join(' ')).toContain('Newer');
    });

    it('PUT through the HTTP route takes the lease and leaves one version after concurrent re-ingests', async () => {
      const put = (i: number) => {
        const { body, headers } = multipartBody(
          { file_id: 'busy', filename: 'busy.txt', collection_name: 'c', user_id: 'u1' },
          { name: 'busy.txt', content: `Round ${i}: the heron waits in the reeds.`, type: 'text/plain' },
        );
        return (i % 2 === 0 ? a : b).app.inject({
          method: 'PUT',
          url: '/api/v1/ingest',
          headers: { ...AUTH, ...headers },
          payload: body,
        });
      };
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => put(i)));
      expect(answers.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
      // Each part reads through its own LanceDB connection, which sees the other's last commit only
      // after its read-consistency interval: read until the view holds the last lease's version.
      const last = await redis.client.hget(leaseKeys('busy').state, 'next');
      const points = await eventually(async () => {
        const now = await pointsOf(a.index, 'busy');
        return versionsOf(now).some((v) => String(fenceOf(v)) === last) && now;
      }, 50);
      expect(versionsOf(points)).toHaveLength(1);
      expect(new Set(points.map((p) => p.id)).size).toBe(points.length);
      expect(await redis.client.hget(leaseKeys('busy').state, 'leases')).toBe('8');
      expect(String(fenceOf(versionsOf(points)[0]!))).toBe(
        await redis.client.hget(leaseKeys('busy').state, 'next'),
      );
      expect(await redis.client.exists(leaseKeys('busy').lock)).toBe(0);
    });

    it('a delete takes the lease and claims it for every collection: a stale writer after it removes itself', async () => {
      expect(await b.part.pipeline().service.deleteFile('busy')).toBeGreaterThan(0);
      const busy = await redis.client.hmget(leaseKeys('busy').state, 'deleted', 'next', 'leases');
      expect(busy[0]).toBe(busy[1]);
      expect(busy[2]).toBe('9');
      expect(await pointsOf(b.index, 'busy')).toEqual([]);

      const keys = leaseKeys('gone');
      const lock = new RedisFileLock(new Redis(redis.url), {
        leaseMs: 60_000,
        retryMs: 20,
        clock: systemClock,
        log,
      });
      await lock.run('gone', async (lease) => {
        const fence = lease.fence!;
        // This holder stalls past its lease; a delete of the file takes the next lease and finishes.
        await redis.client.del(keys.lock);
        await b.part.pipeline().service.deleteFile('gone');
        const deleted = Number(await redis.client.hget(keys.state, 'deleted'));
        expect(deleted).toBeGreaterThan(fence);
        // Only now does the stale holder write its version and try to retire the others.
        const stale = fencedVersion(fence);
        await b.index.upsert([
          {
            id: pointId('gone', stale, 0),
            content: 'stale',
            meta: {
              collection_name: 'c',
              collection_type: 'knowledge',
              file_id: 'gone',
              ingest_version: stale,
              split_id: 0,
            },
          },
        ]);
        const scope = { fileId: 'gone', collectionName: 'c', version: stale };
        expect(await retireFenced(b.index, scope, { ...lease, fence }, log)).toEqual({
          retired: 0,
          superseded: true,
        });
      });
      await lock.close();
      expect(await pointsOf(b.index, 'gone')).toEqual([]);
    });
  },
);
