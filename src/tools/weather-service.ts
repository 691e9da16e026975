import { z } from 'zod';
import type { Units, WeatherClient, WeatherReport } from './weather-client.js';

export const CITY_MAX_CHARS = 100;
export const UNITS = ['metric', 'imperial'] as const;

/**
 * The bounds of a weather request, applied by the REST query validator and re-applied by the MCP
 * tool (whose arguments never pass through the REST validator). One schema, so they cannot drift.
 */
export const weatherArgs = z.object({
  city: z
    .string({ error: 'city must be a string' })
    .trim()
    .min(1, 'city must not be empty')
    .max(CITY_MAX_CHARS, `city must be at most ${CITY_MAX_CHARS} characters`)
    .describe('City name in English, e.g. "Copenhagen".'),
  units: z
    .enum(UNITS, { error: 'units must be "metric" or "imperial"' })
    .default('metric')
    .describe('Unit system the upstream is asked for.'),
});
export type WeatherArgs = z.output<typeof weatherArgs>;

export interface WeatherServiceOptions {
  /** Entry lifetime in ms; 0 disables the cache. */
  ttlMs: number;
  /** Injected clock (ms), so tests can move time. */
  now?: () => number;
  /** Bound on entries; the oldest go first (cities are unbounded user input). */
  maxEntries?: number;
}

export interface WeatherService {
  /** The one function behind both `GET /weather` and the `get_weather` tool. */
  current(args: WeatherArgs, signal?: AbortSignal): Promise<WeatherReport>;
}

/**
 * Weather lookups with an in-process cache: successful answers live `ttlMs`, keyed by
 * every argument (lower-cased city + units); failures are never stored, so the next call retries.
 * Replicas each hold their own cache, which is acceptable for data that is stale-tolerant anyway.
 */
export function createWeatherService(client: WeatherClient, o: WeatherServiceOptions): WeatherService {
  const now = o.now ?? Date.now;
  const maxEntries = o.maxEntries ?? 1000;
  const cache = new Map<string, { value: WeatherReport; expiresAt: number }>();

  return {
    async current(args, signal) {
      const key = `${args.city.toLowerCase()}\u0000${args.units}`;
      const hit = cache.get(key);
      if (hit && hit.expiresAt > now()) return hit.value;
      if (hit) cache.delete(key);
      const value = await client.current(args.city, args.units as Units, signal);
      if (o.ttlMs > 0) {
        cache.set(key, { value, expiresAt: now() + o.ttlMs });
        if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
      }
      return value;
    },
  };
}
