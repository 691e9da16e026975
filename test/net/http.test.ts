import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpFailure, httpExchange, readBytes } from '../../src/net/http.js';
import { type FakeServer, startRecordingServer } from '../fakes/recording-server.js';
import { ManualClock } from '../helpers/clock.js';

let server: FakeServer;
beforeAll(async () => {
  server = await startRecordingServer((req, res) => {
    const size = Number(req.url.searchParams.get('size') ?? '0');
    if (req.path === '/stall') {
      // Headers and a first chunk, then silence.
      res.writeHead(200, { 'content-type': 'application/pdf' });
      res.write(Buffer.alloc(1024, 1));
      return;
    }
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      ...(req.path === '/chunked' ? {} : { 'content-length': String(size) }),
    });
    // Sent in 64 KiB pieces, so a capped reader stops before the end.
    for (let sent = 0; sent < size; sent += 65_536) res.write(Buffer.alloc(Math.min(65_536, size - sent), 7));
    res.end();
  });
});
afterAll(() => server.close());

class TooLarge extends Error {}
const cap = (max: number) => readBytes(max, () => new TooLarge(`over ${max}`));

describe('httpExchange with readBytes', () => {
  it('reads a binary body byte for byte', async () => {
    const answer = await httpExchange({ url: `${server.url}/bytes?size=200000`, timeoutMs: 5000 }, cap(1e6));
    expect(answer).toMatchObject({ status: 200, ok: true, attempts: 1 });
    expect(answer.body.byteLength).toBe(200_000);
    expect(answer.body.every((b) => b === 7)).toBe(true);
  });

  it('refuses a body over the cap from its Content-Length, and mid-stream when there is none', async () => {
    await expect(
      httpExchange({ url: `${server.url}/bytes?size=300000`, timeoutMs: 5000 }, cap(100_000)),
    ).rejects.toThrow(TooLarge);
    await expect(
      httpExchange({ url: `${server.url}/chunked?size=300000`, timeoutMs: 5000 }, cap(100_000)),
    ).rejects.toThrow('over 100000');
  });

  it('a body that stops arriving is a time-out (the clock covers the body, not just the headers)', async () => {
    const clock = new ManualClock();
    let reading!: () => void;
    const bodyStarted = new Promise<void>((resolve) => {
      reading = resolve;
    });
    const reader = (res: Response) => {
      reading();
      return cap(1e6)(res);
    };
    const pending = httpExchange({ url: `${server.url}/stall`, timeoutMs: 30_000 }, reader, { clock }).catch(
      (e: unknown) => e,
    );
    await bodyStarted;
    clock.advance(30_000);
    const err = await pending;
    expect(err).toBeInstanceOf(HttpFailure);
    expect(err).toMatchObject({ kind: 'timeout', reason: 'no answer within 30 s' });
  });
});
