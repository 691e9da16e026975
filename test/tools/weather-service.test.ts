import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWeatherClient, WeatherError } from '../../src/tools/weather-client.js';
import { createWeatherService, weatherArgs } from '../../src/tools/weather-service.js';
import {
  closedPort,
  FAKE_KEY,
  type FakeWeather,
  startFakeWeather,
  startSilentListener,
} from '../fakes/weather.js';

let up: FakeWeather;
const clients: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  up = await startFakeWeather();
});
afterAll(() => up.close());
afterEach(async () => {
  up.mode = { kind: 'ok' };
  up.requests.length = 0;
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

function client(o: { baseUrl?: string; totalTimeoutMs?: number; connectTimeoutMs?: number } = {}) {
  const c = createWeatherClient({ baseUrl: up.url, apiKey: FAKE_KEY, ...o });
  clients.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<WeatherError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WeatherError);
  return err as WeatherError;
}

describe('weather client', () => {
  it('calls GET {base}/weather?city=&units= with the server-held key and maps the answer', async () => {
    const report = await client({ baseUrl: `${up.url}/` }).current('São Paulo', 'imperial');
    expect(report).toEqual({
      city: 'São Paulo',
      temperature_c: 21.5,
      conditions: 'clear over São Paulo',
      observed_at: '2026-11-22T06:00:00Z',
    });
    const sent = up.requests.at(-1)!;
    expect(sent.method).toBe('GET');
    expect(sent.path).toBe('/weather');
    expect(sent.url.searchParams.get('city')).toBe('São Paulo');
    expect(sent.url.searchParams.get('units')).toBe('imperial');
    expect(sent.headers.authorization).toBe(`Bearer ${FAKE_KEY}`);
  });

  it.each([
    [404, 'not-found', 'City not found: Gotham'],
    [400, 'rejected', 'Invalid request to weather API'],
    [401, 'rejected', 'Invalid request to weather API'],
    [429, 'rejected', 'Invalid request to weather API'],
    [500, 'unavailable', 'Upstream weather service unavailable'],
    [503, 'unavailable', 'Upstream weather service unavailable'],
  ])('maps upstream HTTP %i to %s: "%s"', async (status, kind, message) => {
    up.mode = { kind: 'status', status };
    const err = await failure(client().current('Gotham', 'metric'));
    expect(err.kind).toBe(kind);
    expect(err.message).toBe(message);
    expect(err.status).toBe(status);
  });

  it('maps an unreadable 2xx body to "Upstream weather service unavailable"', async () => {
    up.mode = { kind: 'malformed' };
    const err = await failure(client().current('Oslo', 'metric'));
    expect(err.message).toBe('Upstream weather service unavailable');
  });

  it('gives up after the total time-out with "Weather service timed out"', async () => {
    up.mode = { kind: 'slow', delayMs: 2_000 };
    const err = await failure(client({ totalTimeoutMs: 200 }).current('Oslo', 'metric'));
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe('Weather service timed out');
    expect((err.cause as Error).name).toBe('TimeoutError');
  });

  it('gives up when connecting takes longer than the connect time-out', async () => {
    // A TLS handshake to a silent listener never completes: the connect phase hangs.
    const silent = await startSilentListener();
    try {
      const c = client({
        baseUrl: `https://127.0.0.1:${silent.port}`,
        connectTimeoutMs: 200,
        totalTimeoutMs: 20_000,
      });
      const err = await failure(c.current('Oslo', 'metric'));
      expect(err.message).toBe('Weather service timed out');
      // The connect bound fired, not the (much longer) total one.
      expect(((err.cause as Error).cause as { code?: string }).code).toBe('UND_ERR_CONNECT_TIMEOUT');
    } finally {
      await silent.close();
    }
  });

  it('maps a refused connection to "Weather service timed out"', async () => {
    const err = await failure(
      client({ baseUrl: `http://127.0.0.1:${await closedPort()}` }).current('Oslo', 'metric'),
    );
    expect(err.message).toBe('Weather service timed out');
    expect(((err.cause as Error).cause as { code?: string }).code).toBe('ECONNREFUSED');
  });

  it('readiness: up when the upstream answers, down on 5xx or a rejected key', async () => {
    const ac = new AbortController();
    await expect(client().probe(ac.signal)).resolves.toBeUndefined();
    up.mode = { kind: 'status', status: 502 };
    await expect(client().probe(ac.signal)).rejects.toThrow(/HTTP 502/);
    up.mode = { kind: 'ok' };
    const wrongKey = createWeatherClient({ baseUrl: up.url, apiKey: 'nope' });
    clients.push(wrongKey);
    await expect(wrongKey.probe(ac.signal)).rejects.toThrow(/rejected WEATHER_API_KEY \(HTTP 401\)/);
  });
});

describe('weather service cache', () => {
  function service(ttlMs = 600_000) {
    const clock = { now: 1_000_000 };
    const s = createWeatherService(client(), { ttlMs, now: () => clock.now });
    return { s, clock };
  }
  const args = (city: string, units: 'metric' | 'imperial' = 'metric') => weatherArgs.parse({ city, units });

  it('reuses an answer for 600 s, keyed by lower-cased city and units', async () => {
    const { s, clock } = service();
    const first = await s.current(args('Copenhagen'));
    expect(up.requests).toHaveLength(1);

    clock.now += 599_000;
    expect(await s.current(args('COPENHAGEN'))).toEqual(first); // hit: case does not matter
    expect(up.requests).toHaveLength(1);

    await s.current(args('Copenhagen', 'imperial')); // miss: units are part of the key
    expect(up.requests).toHaveLength(2);

    clock.now += 1_000; // 600 s after the first answer: expired
    await s.current(args('copenhagen'));
    expect(up.requests).toHaveLength(3);
  });

  it('never caches an error: the next call asks the upstream again', async () => {
    const { s } = service();
    up.mode = { kind: 'status', status: 503 };
    await expect(s.current(args('Oslo'))).rejects.toThrow('Upstream weather service unavailable');
    up.mode = { kind: 'ok' };
    expect((await s.current(args('Oslo'))).city).toBe('Oslo');
    expect(up.requests).toHaveLength(2);
    await expect(s.current(args('Atlantis'))).rejects.toThrow('City not found: Atlantis');
    await expect(s.current(args('Atlantis'))).rejects.toThrow('City not found: Atlantis');
    expect(up.requests).toHaveLength(4);
  });

  it('a ttl of 0 disables caching', async () => {
    const { s } = service(0);
    await s.current(args('Oslo'));
    await s.current(args('Oslo'));
    expect(up.requests).toHaveLength(2);
  });
});

describe('weather arguments (the bounds REST and MCP share)', () => {
  it('trims the city, defaults units, and rejects what the REST validator rejects', () => {
    expect(weatherArgs.parse({ city: '  Oslo ' })).toEqual({ city: 'Oslo', units: 'metric' });
    expect(weatherArgs.safeParse({ city: '   ' }).success).toBe(false);
    expect(weatherArgs.safeParse({ city: 'x'.repeat(101) }).success).toBe(false);
    expect(weatherArgs.safeParse({ city: 'x'.repeat(100) }).success).toBe(true);
    expect(weatherArgs.safeParse({ city: 'Oslo', units: 'kelvin' }).success).toBe(false);
    expect(weatherArgs.safeParse({}).success).toBe(false);
  });
});
