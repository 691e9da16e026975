import { afterAll, beforeAll } from 'vitest';
import { type RedisServer, startRedis } from './redis.js';

/**
 * A redis-server for the suite that calls this (started before its tests, stopped after them);
 * read its URL once the tests run.
 */
export function redisForSuite(): { readonly url: string } {
  let redis: RedisServer | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  return {
    get url(): string {
      if (!redis) throw new Error('redis-server starts in beforeAll');
      return redis.url;
    },
  };
}
