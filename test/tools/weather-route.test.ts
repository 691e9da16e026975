import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closedPort, type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { AUTH } from '../helpers/app.js';
import { startTools, type ToolsHarness } from './harness.js';

let up: FakeWeather;
let h: ToolsHarness | undefined;

beforeAll(async () => {
  up = await startFakeWeather();
});
afterAll(() => up.close());
afterEach(async () => {
  await h?.app.close();
  h = undefined;
  up.mode = { kind: 'ok' };
  up.requests.length = 0;
});

describe('GET /weather (the REST twin of get_weather)', () => {
  it('requires the bearer key', async () => {
    h = await startTools(up.url);
    const res = await h.app.inject({ url: '/weather?city=Oslo' });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ detail: 'Invalid API key' });
    expect(up.requests).toHaveLength(0);
  });

  it('answers the same object the tool returns', async () => {
    h = await startTools(up.url);
    const res = await h.app.inject({ url: '/weather?city=Oslo', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      city: 'Oslo',
      temperature_c: 12.5,
      conditions: 'clear over Oslo',
      observed_at: '2026-11-22T06:00:00Z',
    });
    expect(up.requests.at(-1)!.url.searchParams.get('units')).toBe('metric');
  });

  it.each([
    ['city=', /city must not be empty/],
    [`city=${'x'.repeat(101)}`, /city must be at most 100 characters/],
    ['city=Oslo&units=kelvin', /units must be "metric" or "imperial"/],
    ['', /city/],
  ])('rejects ?%s with 422', async (query, detail) => {
    h = await startTools(up.url);
    const res = await h.app.inject({ url: `/weather?${query}`, headers: AUTH });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toMatch(detail);
    expect(up.requests).toHaveLength(0);
  });

  it.each([
    [404, 404, 'NOT_FOUND', 'City not found: Oslo'],
    [400, 502, 'UPSTREAM_FAILED', 'Invalid request to weather API'],
    [503, 502, 'UPSTREAM_FAILED', 'Upstream weather service unavailable'],
  ])('maps upstream %i to %i %s', async (upstream, status, code, detail) => {
    h = await startTools(up.url);
    up.mode = { kind: 'status', status: upstream };
    const res = await h.app.inject({ url: '/weather?city=Oslo', headers: AUTH });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({ detail, code });
  });

  it('maps an upstream time-out to 504', async () => {
    h = await startTools(up.url, {}, { totalTimeoutMs: 150 });
    up.mode = { kind: 'slow', delayMs: 1500 };
    const res = await h.app.inject({ url: '/weather?city=Oslo', headers: AUTH });
    expect(res.statusCode).toBe(504);
    expect(res.json()).toEqual({ detail: 'Weather service timed out', code: 'UPSTREAM_FAILED' });
  });
});

describe('tool server readiness', () => {
  it('is ready when the upstream answers', async () => {
    h = await startTools(up.url);
    const res = await h.app.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(up.requests.at(-1)!.path).toBe('/weather');
  });

  it('is 503 with detail when the upstream fails or cannot be reached', async () => {
    h = await startTools(up.url);
    up.mode = { kind: 'status', status: 503 };
    let res = await h.app.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      status: 'error',
      detail: `weather-api: GET ${up.url}/weather answered HTTP 503`,
    });
    await h.app.close();
    h = await startTools(`http://127.0.0.1:${await closedPort()}`);
    res = await h.app.inject({ url: '/health/ready' });
    expect(res.statusCode).toBe(503);
    expect(res.json().detail).toMatch(/^weather-api: fetch failed: .*ECONNREFUSED/);
    expect((await h.app.inject({ url: '/health' })).statusCode).toBe(200);
  });
});
