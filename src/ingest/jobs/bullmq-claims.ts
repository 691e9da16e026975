import type { Result } from 'ioredis';

/**
 * A worker starting run `n` of a job claims it (`run:<n>`) unless it was cancelled; a cancel wins
 * only while the claim is still the one it saw (no run yet, or the run that failed and waits for
 * its retry). Both in one script each, so a job is never both cancelled and running.
 */
export const CLAIM_RUN = `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 6) == 'cancel' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1`;
export const CLAIM_CANCEL = `
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 6) == 'cancel' then return 1 end
if (v == false and ARGV[2] == '') or v == ARGV[2] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[3])
  return 1
end
return 0`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    kildeJobRun(key: string, value: string, ttl: number): Result<number, Context>;
    kildeJobCancel(key: string, value: string, expected: string, ttl: number): Result<number, Context>;
  }
}

/** Claims (run or cancel) outlive the bounded history. */
export const CLAIM_TTL_S = 7 * 24 * 3600;
