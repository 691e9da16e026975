import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { TokenCounter } from './chunker.js';

/*
 * `@anush008/tokenizers` (the Rust `tokenizers` crate over N-API) only encodes asynchronously, while
 * chunking is synchronous. The tokenizer therefore lives in a worker thread and the calling thread
 * blocks on a shared flag (Atomics.wait) until the answer is posted — about 0.1 ms per call. The worker
 * is evaluated from a string so the same code runs from `src/` (tests, tsx) and from `dist/`.
 */
const WORKER_SOURCE = String.raw`
const { workerData, parentPort } = require('node:worker_threads');
const { Tokenizer } = require(workerData.modulePath);
const flag = new Int32Array(workerData.flag);
const port = workerData.port;
const asyncPort = workerData.asyncPort;
const SURROGATE = /[\uD800-\uDFFF]/;
let tok;
try {
  tok = Tokenizer.fromFile(workerData.file);
  // Counting must see the whole text: the file's own truncation/padding settings would cap it.
  tok.disableTruncation();
  tok.disablePadding();
} catch (err) {
  parentPort.postMessage({ error: String((err && err.message) || err) });
}
// The tokenizer reports offsets in Unicode code points; JavaScript strings index UTF-16 code units.
function toUtf16(text) {
  if (!SURROGATE.test(text)) return undefined;
  const map = [];
  let unit = 0;
  for (const ch of text) { map.push(unit); unit += ch.length; }
  map.push(unit);
  return map;
}
if (tok) port.on('message', async (req) => {
  let reply;
  try {
    if (req.texts) {
      const encs = await tok.encodeBatch(req.texts, { addSpecialTokens: false });
      reply = { offsets: Int32Array.from(encs, (e) => e.getLength()) };
    } else {
    const enc = await tok.encode(req.text, null, { addSpecialTokens: false });
    const offs = enc.getOffsets();
    const map = toUtf16(req.text);
    const out = new Int32Array(offs.length * 2);
    for (let i = 0; i < offs.length; i++) {
      const o = offs[i];
      out[2 * i] = map ? map[o[0]] : o[0];
      out[2 * i + 1] = map ? map[o[1]] : o[1];
    }
    reply = { offsets: out };
    }
  } catch (err) {
    reply = { error: String((err && err.message) || err) };
  }
  port.postMessage(reply);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
// Counts asked for without blocking the caller: the answer is an ordinary message.
if (tok) asyncPort.on('message', async (req) => {
  try {
    const encs = await tok.encodeBatch(req.texts, { addSpecialTokens: false });
    asyncPort.postMessage({ id: req.id, counts: Int32Array.from(encs, (e) => e.getLength()) });
  } catch (err) {
    asyncPort.postMessage({ id: req.id, error: String((err && err.message) || err) });
  }
});
if (tok) tok.encode('', null, { addSpecialTokens: true }).then(
  (e) => parentPort.postMessage({ ready: true, specialTokens: e.getLength() }),
  (err) => parentPort.postMessage({ error: String((err && err.message) || err) }),
);
`;

/**
 * How long one encode may block the caller before we give up (a wedged worker must not hang ingest):
 * a base plus 20 µs per character, some 25 times the measured encoding cost, so a large document is
 * never mistaken for a wedged worker.
 */
function timeoutFor(chars: number): number {
  return 30_000 + Math.ceil(chars / 50);
}

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

interface Reply {
  offsets?: Int32Array;
  error?: string;
}

/** Starts a tokenizer worker for a local `tokenizer.json`; rejects with the tokenizer's own error. */
export async function startTokenizerWorker(file: string): Promise<TokenCounter> {
  const modulePath = createRequire(import.meta.url).resolve('@anush008/tokenizers');
  const flagBuffer = new SharedArrayBuffer(4);
  const flag = new Int32Array(flagBuffer);
  const { port1, port2 } = new MessageChannel();
  const asyncChannel = new MessageChannel();
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { modulePath, file, flag: flagBuffer, port: port2, asyncPort: asyncChannel.port2 },
    transferList: [port2, asyncChannel.port2],
  });
  const specialTokens = await new Promise<number>((resolve, reject) => {
    worker.once('message', (m: { ready?: boolean; specialTokens?: number; error?: string }) => {
      if (m.ready) resolve(m.specialTokens ?? 0);
      else reject(new Error(m.error ?? 'tokenizer worker failed to start'));
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`tokenizer worker exited with code ${code}`)));
  }).catch(async (err: unknown) => {
    await worker.terminate();
    port1.close();
    asyncChannel.port1.close();
    throw err;
  });
  // Neither the worker nor the ports may keep the process alive.
  worker.unref();
  port1.unref();
  const countAsync = asyncCounter(asyncChannel.port1);

  let broken: Error | undefined;
  const send = (request: { text: string } | { texts: string[] }): Int32Array => {
    if (broken) throw broken;
    try {
      return call(port1, flag, request);
    } catch (err) {
      // A timed-out answer may still arrive later and would be taken for the next request's answer.
      if (err instanceof TimeoutError) broken = err;
      throw err;
    }
  };
  let lastText: string | undefined;
  let lastOffsets: Array<[number, number]> = [];
  const encode = (text: string): Array<[number, number]> => {
    if (text === lastText) return lastOffsets;
    const flat = send({ text });
    const out: Array<[number, number]> = new Array(flat.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = [flat[2 * i]!, flat[2 * i + 1]!];
    lastText = text;
    lastOffsets = out;
    return out;
  };

  return {
    source: file,
    specialTokens,
    count: (text) => (text === '' ? 0 : encode(text).length),
    offsets: (text) => (text === '' ? [] : encode(text).slice()),
    // One round trip, and the tokenizer encodes the batch on all cores.
    countMany: (texts) => (texts.length === 0 ? [] : Array.from(send({ texts }))),
    countManyAsync: (texts) => (texts.length === 0 ? Promise.resolve([]) : countAsync(texts)),
    async close() {
      port1.close();
      asyncChannel.port1.close();
      await worker.terminate();
    },
  };
}

/**
 * Batch counts answered as ordinary messages, so the caller's event loop keeps running while the
 * tokenizer works (the ingestion pipeline's embedder counts every chunk). The port holds the process
 * only while an answer is awaited.
 */
function asyncCounter(port: MessagePort): (texts: string[]) => Promise<number[]> {
  let next = 0;
  const pending = new Map<number, { resolve: (c: number[]) => void; reject: (e: Error) => void }>();
  port.on('message', (m: { id: number; counts?: Int32Array; error?: string }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (pending.size === 0) port.unref();
    if (m.error !== undefined) p.reject(new Error(`tokenizer failed: ${m.error}`));
    else p.resolve(Array.from(m.counts ?? []));
  });
  port.unref();
  return (texts) =>
    new Promise<number[]>((resolve, reject) => {
      const id = next++;
      const chars = texts.reduce((n, t) => n + t.length, 0);
      const timeoutMs = timeoutFor(chars);
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new TimeoutError(`tokenizer did not answer within ${Math.round(timeoutMs / 1000)} s`));
      }, timeoutMs);
      timer.unref();
      pending.set(id, {
        resolve: (c) => {
          clearTimeout(timer);
          resolve(c);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      port.ref();
      port.postMessage({ id, texts });
    });
}

function call(
  port: MessagePort,
  flag: Int32Array,
  request: { text: string } | { texts: string[] },
): Int32Array {
  const chars = 'text' in request ? request.text.length : request.texts.reduce((n, t) => n + t.length, 0);
  const timeoutMs = timeoutFor(chars);
  Atomics.store(flag, 0, 0);
  port.postMessage(request);
  if (Atomics.wait(flag, 0, 0, timeoutMs) === 'timed-out') {
    throw new TimeoutError(`tokenizer did not answer within ${Math.round(timeoutMs / 1000)} s`);
  }
  const received = receiveMessageOnPort(port);
  const reply = received?.message as Reply | undefined;
  if (!reply) throw new Error('tokenizer worker sent no answer');
  if (reply.error !== undefined) throw new Error(`tokenizer failed: ${reply.error}`);
  return reply.offsets ?? new Int32Array(0);
}
