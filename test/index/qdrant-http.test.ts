import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { pino } from 'pino';
import { Agent } from 'undici';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createQdrantHttp, qdrantBaseUrl } from '../../src/index/qdrant-http.js';
import { startQdrantFake } from '../fakes/qdrant-server.js';

describe('qdrantBaseUrl', () => {
  it('defaults to port 6333 like the official Qdrant clients', () => {
    expect(qdrantBaseUrl('http://qdrant')).toBe('http://qdrant:6333');
    expect(qdrantBaseUrl('https://db.example.com/')).toBe('https://db.example.com:6333');
    expect(qdrantBaseUrl('http://[::1]')).toBe('http://[::1]:6333');
  });

  it('keeps an explicit port, even the scheme default, and a path prefix', () => {
    expect(qdrantBaseUrl('http://127.0.0.1:6334')).toBe('http://127.0.0.1:6334');
    expect(qdrantBaseUrl('https://proxy.example.com:443/qdrant/')).toBe(
      'https://proxy.example.com:443/qdrant',
    );
    expect(qdrantBaseUrl('http://localhost:80')).toBe('http://localhost:80');
    expect(qdrantBaseUrl('http://[::1]:7000/')).toBe('http://[::1]:7000');
  });
});

describe('createQdrantHttp on the wire', () => {
  it('asks for plain answers: a gzipped one costs a delayed-ACK stall per search', async () => {
    const fake = await startQdrantFake();
    try {
      // The fake compresses like Qdrant when a client accepts gzip (fetch does by default)...
      const asked = await fetch(`${fake.url}/collections/docs/exists`);
      expect(asked.headers.get('content-encoding')).toBe('gzip');
      expect(await asked.json()).toMatchObject({ result: { exists: false } });
      // ...and Kilde's transport never accepts it.
      const http = createQdrantHttp({
        baseUrl: fake.url,
        timeoutMs: 5000,
        fetch,
        log: pino({ level: 'silent' }),
      });
      const exists = await http.call(
        { method: 'GET', path: '/collections/docs/exists' },
        z.object({ exists: z.boolean() }),
      );
      expect(exists).toEqual({ exists: false });
      const sent = fake.requests.at(-1);
      expect(sent?.headers['accept-encoding']).toBe('identity');
    } finally {
      await fake.close();
    }
  });
});

describe('createQdrantHttp and kept-alive connections', () => {
  it('sends a call again, once, when the server closed the kept-alive connection it went out on', async () => {
    // Answers the first request of each connection and keeps it open; a second request on the same
    // connection finds it closed (as Qdrant closes idle ones), before any answer.
    const seen: string[] = [];
    const server = createServer((req, res) => {
      const socket = req.socket as Socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      seen.push(`${req.method} ${req.url} #${socket.served}`);
      if (socket.served > 1) return socket.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ result: { exists: true }, status: 'ok', time: 0 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      // One connection at most, so the second call must go out on the first call's connection.
      const agent = new Agent({ connections: 1 });
      const oneConnection: typeof fetch = (url, init) =>
        fetch(url, { ...init, dispatcher: agent as unknown as NonNullable<RequestInit['dispatcher']> });
      const http = createQdrantHttp({
        baseUrl: `http://127.0.0.1:${port}`,
        timeoutMs: 5000,
        fetch: oneConnection,
        log: pino({ level: 'silent' }),
      });
      const exists = z.object({ exists: z.boolean() });
      const call = { method: 'POST', path: '/collections/docs/points/query', body: {} } as const;
      expect(await http.call(call, exists)).toEqual({ exists: true });
      expect(await http.call(call, exists)).toEqual({ exists: true });
      expect(seen).toEqual([
        'POST /collections/docs/points/query #1',
        'POST /collections/docs/points/query #2',
        'POST /collections/docs/points/query #1',
      ]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
