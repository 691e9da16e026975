import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { ToolsConfig } from '../config/tools.js';
import { KildeError } from '../errors.js';
import type { ServicePart } from '../http/app.js';
import type { ToolSource } from '../mcp/endpoint.js';
import { createWeatherClient, WeatherError, type WeatherFailure } from './weather-client.js';
import { createWeatherService, type WeatherService, weatherArgs } from './weather-service.js';
import { weatherTool } from './weather-tool.js';

export interface ToolsDeps {
  fetch?: typeof fetch;
  dispatcher?: Dispatcher;
  /** Clock for the weather cache (ms). */
  now?: () => number;
  /** Overrides of the 10 s total / 3 s connect bounds of an upstream call, for tests. */
  totalTimeoutMs?: number;
  connectTimeoutMs?: number;
}

export interface ToolsPart extends ServicePart {
  weather: WeatherService;
  /** `get_weather`, for the app's `/mcp` (src/mcp/endpoint.ts). */
  mcpTools: ToolSource;
}

const weatherResponse = z.object({
  city: z.string(),
  temperature_c: z.number(),
  conditions: z.string(),
  observed_at: z.string(),
});

/** How `GET /weather` reports an upstream failure (the tool reports the same message over JSON-RPC). */
const REST_ERRORS: Record<WeatherFailure, { code: 'NOT_FOUND' | 'UPSTREAM_FAILED'; variant?: 'timeout' }> = {
  'not-found': { code: 'NOT_FOUND' },
  rejected: { code: 'UPSTREAM_FAILED' },
  unavailable: { code: 'UPSTREAM_FAILED' },
  timeout: { code: 'UPSTREAM_FAILED', variant: 'timeout' },
};

/**
 * The tool server: `get_weather` for `/mcp` (which whoever composes the server mounts), the REST
 * twin `GET /weather` (bearer), and a readiness probe of the upstream.
 */
export function createToolsPart(config: ToolsConfig, deps: ToolsDeps = {}): ToolsPart {
  const client = createWeatherClient({
    baseUrl: config.WEATHER_API_BASE_URL,
    apiKey: config.WEATHER_API_KEY,
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    ...(deps.dispatcher ? { dispatcher: deps.dispatcher } : {}),
    ...(deps.totalTimeoutMs === undefined ? {} : { totalTimeoutMs: deps.totalTimeoutMs }),
    ...(deps.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: deps.connectTimeoutMs }),
  });
  const weather = createWeatherService(client, {
    ttlMs: config.WEATHER_CACHE_TTL * 1000,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const tool = weatherTool(weather);

  return {
    name: 'tools',
    weather,
    mcpTools: () => [tool],
    probes: [{ name: 'weather-api', timeoutMs: 3000, check: (signal) => client.probe(signal) }],
    register(app, ctx) {
      app.get(
        '/weather',
        { onRequest: ctx.auth, schema: { querystring: weatherArgs, response: { 200: weatherResponse } } },
        async (request) => {
          try {
            return await weather.current(request.query);
          } catch (err) {
            if (!(err instanceof WeatherError)) throw err;
            const { code, variant } = REST_ERRORS[err.kind];
            // The contract's messages ("Weather service timed out") are written for users.
            throw new KildeError(code, err.message, { variant, cause: err, expose: true });
          }
        },
      );
    },
    close: () => client.close(),
  };
}
