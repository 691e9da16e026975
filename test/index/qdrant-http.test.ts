import { pino } from 'pino';
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
