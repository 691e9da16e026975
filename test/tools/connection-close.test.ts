import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { INIT_PARAMS, MCP_HEADERS, rpc, startTools, type ToolsHarness } from './harness.js';

/**
 * `/mcp` honours `Connection: close` and HTTP/1.0 (issue #18 item 5): the SDK answers with an
 * explicit `Connection: keep-alive`, which used to keep such sockets open until the keep-alive
 * time-out. Raw sockets, because HTTP clients manage connections themselves.
 */
let up: FakeWeather;
let t: ToolsHarness;
beforeAll(async () => {
  up = await startFakeWeather();
  t = await startTools(up.url);
});
afterAll(async () => {
  await t?.app.close();
  await up?.close();
});

interface Exchange {
  head: string;
  body: string;
  /** Resolves when the server closes the connection. */
  closed: Promise<void>;
  isClosed: () => boolean;
  destroy: () => void;
}

/** Sends one request and resolves once the whole answer (by Content-Length) has arrived. */
function exchange(
  version: '1.0' | '1.1',
  extra: Record<string, string>,
  mode: 'json' | 'json-rpc',
): Promise<Exchange> {
  const port = Number(new URL(t.base).port);
  const body = rpc('initialize', INIT_PARAMS);
  const headers = {
    host: `127.0.0.1:${port}`,
    'content-type': 'application/json',
    accept: mode === 'json' ? 'application/json' : MCP_HEADERS.accept,
    'content-length': String(Buffer.byteLength(body)),
    ...extra,
  };
  const socket = connect(port, '127.0.0.1');
  let closed = false;
  const whenClosed = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closed = true;
      resolve();
    }),
  );
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const split = got.indexOf('\r\n\r\n');
      if (split < 0) return;
      const head = got.subarray(0, split).toString('latin1');
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? Number.NaN);
      const rest = got.subarray(split + 4);
      if (Number.isNaN(length) || rest.length < length) return;
      resolve({
        head,
        body: rest.subarray(0, length).toString('utf8'),
        closed: whenClosed,
        isClosed: () => closed,
        destroy: () => socket.destroy(),
      });
    });
    const lines = [`POST /mcp HTTP/${version}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  });
}

describe('/mcp and the connection header', () => {
  it.each([
    ['HTTP/1.1 with Connection: close', '1.1', { connection: 'close' }],
    ['HTTP/1.1 with Connection: Close (any case, in a list)', '1.1', { connection: 'TE, Close' }],
    ['HTTP/1.0 without keep-alive', '1.0', {}],
  ] as const)('%s: answers, says close and closes the socket', async (_name, version, extra) => {
    const x = await exchange(version, extra, 'json-rpc');
    expect(x.head).toMatch(/^HTTP\/1\.1 200/);
    expect(x.head).toMatch(/\r\nconnection: close/i);
    expect(x.head).not.toMatch(/keep-alive/i);
    expect(x.body).toContain('"protocolVersion"');
    await x.closed;
    expect(x.isClosed()).toBe(true);
  });

  it('keeps a keep-alive connection open', async () => {
    const x = await exchange('1.1', {}, 'json-rpc');
    expect(x.head).toMatch(/\r\nconnection: keep-alive/i);
    expect(x.isClosed()).toBe(false);
    x.destroy();
  });

  it('closes after an error answer too', async () => {
    const x = await exchange('1.0', {}, 'json');
    expect(x.head).toMatch(/^HTTP\/1\.1 406/);
    await x.closed;
    expect(x.isClosed()).toBe(true);
  });
});
