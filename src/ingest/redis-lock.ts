import { randomBytes } from 'node:crypto';
import { Redis, type Result } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock, Timer } from '../clock.js';
import { KildeError } from '../errors.js';
import { DELETED_SCOPE, type FileLock, KeyedMutex, type Lease } from './lock.js';

/**
 * The per-`file_id` lock shared by every ingestion replica (`REDIS_URL`): a lease in Redis.
 *
 * - Taking it: `SET lock token NX PX lease` and, in the same script, the lease's fence: larger
 *   than every fence taken on the file_id before, and at least Redis's clock in milliseconds. A held lease is retried after
 *   a random wait of at most `retryMs` (on the Clock); a replica's own requests queue in-process first
 *   (a {@link KeyedMutex}), so each replica has at most one request polling Redis per file_id.
 * - Holding it: renewed (`PEXPIRE` if the value is still our token) every third of the lease on the
 *   Clock while the ingest runs. If the holder dies, Redis's TTL frees the lease.
 * - Releasing it: compare-and-delete (`DEL` only if the value is still our token).
 * - Fencing: a finished write `claim`s its fence for its collection (`HSET` if larger); a holder
 *   whose lease expired and whose version is older than a claimed one removes its own version
 *   instead of retiring the newer one (src/versions/retire.ts, `retireFenced`).
 *
 * Both keys of a file_id share one hash tag (`kilde:{file_id}:…`), so the scripts also run on a
 * Redis Cluster. The state hash (the fence counter and the claims) has no expiry: one small hash
 * per file_id ever ingested.
 */

/**
 * The fence: one more than the last one, and at least Redis's clock in milliseconds, so fences keep
 * growing across a restart of a Redis that lost its data (no persistence): a version written before
 * the restart never looks newer than one written after it. `leases` counts the leases taken.
 */
const ACQUIRE = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = math.max(tonumber(redis.call('HGET', KEYS[2], 'next') or '0') + 1, now)
redis.call('HSET', KEYS[2], 'next', fence)
redis.call('HINCRBY', KEYS[2], 'leases', 1)
return fence`;

const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/** Raises the scope's claim to ARGV[2] when larger; answers the newest claim of the scope or of a delete. */
const CLAIM = `
local fence = tonumber(ARGV[2])
local current = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if fence > current then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  current = fence
end
local deleted = tonumber(redis.call('HGET', KEYS[1], 'deleted') or '0')
if deleted > current then return deleted end
return current`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    kildeAcquire(lock: string, state: string, token: string, ms: number): Result<number, Context>;
    kildeRenew(lock: string, token: string, ms: number): Result<number, Context>;
    kildeRelease(lock: string, token: string): Result<number, Context>;
    kildeClaim(state: string, field: string, fence: number): Result<number, Context>;
  }
}

export interface RedisLockOptions {
  /** Lease lifetime (ms); renewed every third of it. */
  leaseMs: number;
  /** Largest wait between two attempts on a held lease (ms). */
  retryMs: number;
  clock: Clock;
  log: Logger;
  /** Key prefix (tests give each run its own). */
  prefix?: string;
}

/** The Redis keys of one file_id's lease and state (exported for tests and operators). */
export function leaseKeys(fileId: string, prefix = 'kilde'): { lock: string; state: string } {
  return { lock: `${prefix}:{${fileId}}:lock`, state: `${prefix}:{${fileId}}:state` };
}

function lockFailed(message: string, cause?: unknown): KildeError {
  return new KildeError('LOCK_FAILED', message, cause === undefined ? {} : { cause });
}

/** Opens the client Kilde uses for leases: commands fail fast instead of queueing while Redis is down. */
export function connectRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    // A Redis that accepts the connection but does not answer fails the request instead of hanging it.
    commandTimeout: 10_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  redis.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  return redis;
}

export class RedisFileLock implements FileLock {
  readonly #local = new KeyedMutex();
  readonly #redis: Redis;
  readonly #o: Required<RedisLockOptions>;

  constructor(redis: Redis, options: RedisLockOptions) {
    this.#redis = redis;
    this.#o = { prefix: 'kilde', ...options };
    redis.defineCommand('kildeAcquire', { numberOfKeys: 2, lua: ACQUIRE });
    redis.defineCommand('kildeRenew', { numberOfKeys: 1, lua: RENEW });
    redis.defineCommand('kildeRelease', { numberOfKeys: 1, lua: RELEASE });
    redis.defineCommand('kildeClaim', { numberOfKeys: 1, lua: CLAIM });
  }

  /** Connects (once); start-up fails clearly when Redis is unreachable. */
  async connect(): Promise<void> {
    if (this.#redis.status === 'wait') await this.#redis.connect();
    await this.#redis.ping();
  }

  run<T>(key: string, fn: (lease: Lease) => Promise<T>): Promise<T> {
    return this.#local.run(key, async () => {
      const held = await this.#acquire(key);
      try {
        return await fn(held.lease);
      } finally {
        await held.release();
      }
    });
  }

  async close(): Promise<void> {
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  async #acquire(fileId: string): Promise<{ lease: Lease; release: () => Promise<void> }> {
    const { leaseMs, retryMs, clock, log, prefix } = this.#o;
    const keys = leaseKeys(fileId, prefix);
    const token = randomBytes(16).toString('hex');
    let fence = 0;
    for (;;) {
      try {
        fence = await this.#redis.kildeAcquire(keys.lock, keys.state, token, leaseMs);
      } catch (err) {
        throw lockFailed('Redis is unreachable: the per-file_id lease could not be taken', err);
      }
      if (fence > 0) break;
      await clock.sleep(retryMs / 2 + Math.random() * (retryMs / 2));
    }

    let lost = false;
    let timer: Timer | undefined;
    const renew = () => {
      timer = clock.schedule(() => {
        this.#redis.kildeRenew(keys.lock, token, leaseMs).then(
          (ok) => {
            if (lost) return;
            if (ok === 1) renew();
            else {
              lost = true;
              log.warn({ fileId, fence }, 'the per-file_id lease expired while its ingest ran');
            }
          },
          (err: unknown) => {
            // Redis unreachable: keep trying; should the lease expire meanwhile, the fence holds.
            log.warn({ err, fileId, fence }, 'renewing the per-file_id lease failed; retrying');
            if (!lost) renew();
          },
        );
      }, leaseMs / 3);
    };
    renew();

    const lease: Lease = {
      fence,
      assertHeld: async () => {
        let owner: string | null;
        try {
          owner = await this.#redis.get(keys.lock);
        } catch (err) {
          throw lockFailed('Redis is unreachable: the per-file_id lease could not be checked', err);
        }
        if (lost || owner !== token) {
          lost = true;
          throw lockFailed(`the lease on file_id ${fileId} expired before its version was written`);
        }
      },
      claim: async (scope) => {
        const field = scope === DELETED_SCOPE ? 'deleted' : `c:${scope}`;
        try {
          return await this.#redis.kildeClaim(keys.state, field, fence);
        } catch (err) {
          throw lockFailed('Redis is unreachable: the new version could not be fenced', err);
        }
      },
    };
    const release = async () => {
      timer?.cancel();
      lost = true;
      try {
        await this.#redis.kildeRelease(keys.lock, token);
      } catch (err) {
        // The lease expires on its own.
        log.warn({ err, fileId, fence }, 'releasing the per-file_id lease failed; it expires by itself');
      }
    };
    return { lease, release };
  }
}
