import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { type FakeServer, sendJson, startRecordingServer } from './recording-server.js';

/**
 * A fake weather upstream in the reference deployment's wire shape: `GET /weather?city=&units=`
 * with `Authorization: Bearer <key>` answers `{city, current: {temp_c, conditions, observed_at}}`.
 */
export type WeatherMode =
  | { kind: 'ok' }
  | { kind: 'status'; status: number }
  | { kind: 'slow'; delayMs: number }
  /** Holds the answer until `release()` is called (for streaming tests). */
  | { kind: 'gated' }
  | { kind: 'malformed' };

export interface FakeWeather extends FakeServer {
  mode: WeatherMode;
  /** Lets a `gated` request answer. */
  release(): void;
  /** Resolves when the next request arrives. */
  nextRequest(): Promise<void>;
}

export const FAKE_KEY = 'weather-key';

export function observation(city: string, units: string) {
  return {
    city,
    current: {
      temp_c: units === 'imperial' ? 21.5 : 12.5,
      conditions: `clear over ${city}`,
      observed_at: '2026-11-22T06:00:00Z',
    },
    // Extra fields a real API sends; Kilde must ignore them.
    location: { lat: 55.68, lon: 12.57 },
  };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export async function startFakeWeather(): Promise<FakeWeather> {
  const state: { mode: WeatherMode } = { mode: { kind: 'ok' } };
  let gate = deferred();
  let arrived = deferred();
  const server = await startRecordingServer(async (req, res) => {
    arrived.resolve();
    arrived = deferred();
    if (req.path !== '/weather') return sendJson(res, 404, { error: 'no such route' });
    if (req.headers.authorization !== `Bearer ${FAKE_KEY}`) return sendJson(res, 401, { error: 'bad key' });
    const mode = state.mode;
    if (mode.kind === 'status') return sendJson(res, mode.status, { error: `status ${mode.status}` });
    const city = req.url.searchParams.get('city');
    const units = req.url.searchParams.get('units') ?? 'metric';
    if (!city) return sendJson(res, 400, { error: 'city is required' });
    switch (mode.kind) {
      case 'slow':
        await new Promise((r) => setTimeout(r, mode.delayMs));
        return sendJson(res, 200, observation(city, units));
      case 'gated':
        await gate.promise;
        return sendJson(res, 200, observation(city, units));
      case 'malformed':
        return sendJson(res, 200, { city, current: { temp_c: 'warm' } });
      case 'ok':
        if (city.toLowerCase() === 'atlantis') return sendJson(res, 404, { error: 'unknown city' });
        return sendJson(res, 200, observation(city, units));
    }
  });
  return {
    ...server,
    get mode() {
      return state.mode;
    },
    set mode(m: WeatherMode) {
      state.mode = m;
    },
    release() {
      gate.resolve();
      gate = deferred();
    },
    nextRequest: () => arrived.promise,
  };
}

/**
 * A TCP listener that accepts and never speaks: an `https://` URL pointing at it never completes
 * the TLS handshake, which is how a connect time-out looks on loopback (undici counts the TLS
 * handshake as part of connecting).
 */
export async function startSilentListener(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A loopback port nothing listens on (connections are refused). */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
