import { Agent, type Dispatcher } from 'undici';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { type HttpAnswer, HttpFailure, httpRequest } from '../net/http.js';
import { joinUrl } from '../net/join-url.js';

/** One upstream call gets 10 s in total and 3 s to connect: a synchronous tool must answer within a chat turn. */
export const WEATHER_TOTAL_TIMEOUT_MS = 10_000;
export const WEATHER_CONNECT_TIMEOUT_MS = 3_000;

export type Units = 'metric' | 'imperial';

/** The tool's result object: the four fields `get_weather` returns, as a JSON string. */
export interface WeatherReport {
  city: string;
  temperature_c: number;
  conditions: string;
  observed_at: string;
}

export type WeatherFailure = 'not-found' | 'rejected' | 'unavailable' | 'timeout';

/**
 * An upstream failure, already carrying its user-facing message (404 `City not found: <city>`, other
 * 4xx `Invalid request to weather API`, 5xx `Upstream weather service unavailable`, time-out or
 * transport error `Weather service timed out`). It is a plain
 * error (no HTTP status of ours): the REST route and the MCP tool each map `kind` their own way.
 */
export class WeatherError extends Error {
  override readonly name = 'WeatherError';
  constructor(
    readonly kind: WeatherFailure,
    message: string,
    options: { cause?: unknown; status?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
  }
  /** The upstream's HTTP status, when it answered. */
  readonly status: number | undefined;
}

/** Only the fields Kilde reads from `GET /weather`. */
const upstreamSchema = z.object({
  city: z.string(),
  current: z.object({ temp_c: z.number(), conditions: z.string(), observed_at: z.string() }),
});

export interface WeatherClientOptions {
  baseUrl: string;
  apiKey: string;
  totalTimeoutMs?: number;
  connectTimeoutMs?: number;
  fetch?: typeof fetch;
  /** The total time-out of each call (tests pass a manual clock). */
  clock?: Clock;
  /** Connection pool; by default an undici Agent with the connect time-out. */
  dispatcher?: Dispatcher;
}

export interface WeatherClient {
  current(city: string, units: Units, signal?: AbortSignal): Promise<WeatherReport>;
  /** Readiness: the upstream answers HTTP at all and accepts the key. */
  probe(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export function createWeatherClient(o: WeatherClientOptions): WeatherClient {
  const net = { ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.clock ? { clock: o.clock } : {}) };
  const totalMs = o.totalTimeoutMs ?? WEATHER_TOTAL_TIMEOUT_MS;
  const ownDispatcher = o.dispatcher === undefined;
  // The connect bound lives in the pool; the total bound is an abort signal on each call.
  const dispatcher =
    o.dispatcher ?? new Agent({ connect: { timeout: o.connectTimeoutMs ?? WEATHER_CONNECT_TIMEOUT_MS } });
  const headers = { authorization: `Bearer ${o.apiKey}`, accept: 'application/json' };
  const endpoint = joinUrl(o.baseUrl, 'weather');
  // The weather mapping reads the underlying reason (TimeoutError, ECONNREFUSED), not the wrapper.
  const get = (url: string, signal?: AbortSignal) =>
    httpRequest(
      {
        url,
        headers,
        timeoutMs: totalMs,
        signal,
        dispatcher: dispatcher as unknown as RequestInit['dispatcher'],
      },
      net,
    ).catch((err: unknown) => {
      throw err instanceof HttpFailure ? err.cause : err;
    });

  return {
    async current(city, units, signal) {
      const url = `${endpoint}?${new URLSearchParams({ city, units })}`;
      let res: HttpAnswer;
      try {
        res = await get(url, signal);
      } catch (err) {
        // Time-out, refused connection, reset, DNS: the caller can only retry later.
        throw new WeatherError('timeout', 'Weather service timed out', { cause: err });
      }
      if (res.status === 404) throw new WeatherError('not-found', `City not found: ${city}`, { status: 404 });
      if (res.status >= 400 && res.status < 500)
        throw new WeatherError('rejected', 'Invalid request to weather API', { status: res.status });
      if (!res.ok)
        throw new WeatherError('unavailable', 'Upstream weather service unavailable', { status: res.status });
      let parsed: z.infer<typeof upstreamSchema>;
      try {
        parsed = upstreamSchema.parse(JSON.parse(res.text));
      } catch (err) {
        // A 2xx we cannot read is the upstream failing, not the caller.
        throw new WeatherError('unavailable', 'Upstream weather service unavailable', {
          cause: err,
          status: res.status,
        });
      }
      return {
        city: parsed.city,
        temperature_c: parsed.current.temp_c,
        conditions: parsed.current.conditions,
        observed_at: parsed.current.observed_at,
      };
    },

    async probe(signal) {
      // No city: a healthy upstream answers 4xx (missing parameter), which still proves it is up.
      const res = await get(endpoint, signal);
      if (res.status === 401 || res.status === 403)
        throw new Error(`GET ${endpoint} rejected WEATHER_API_KEY (HTTP ${res.status})`);
      if (res.status >= 500) throw new Error(`GET ${endpoint} answered HTTP ${res.status}`);
    },

    async close() {
      if (ownDispatcher) await dispatcher.close();
    },
  };
}
