import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { KildeError } from '../errors.js';
import { streamToFile, tooLarge } from './byte-limit.js';
import { checkFileName, invalid } from './request.js';
import { sourcePath } from './temp-dir.js';

export interface ReceivedFile {
  /** Where it was stored; empty when it was kept in memory (`data`). */
  path: string;
  /** The whole file, when it was no larger than `memoryBytes`. */
  data?: Buffer;
  bytes: number;
  /** The name the client gave the part (may be empty). */
  filename: string;
  /** The part's Content-Type, unless it is the uninformative `application/octet-stream`. */
  mimeType?: string;
}

export interface ReceivedForm {
  fields: Record<string, string>;
  file: ReceivedFile;
  /** Names of file parts other than `file` (skipped). */
  ignoredParts: string[];
}

/**
 * Reads a multipart body part by part: the `file` part streams straight into `dir` with the size limit
 * enforced as bytes arrive (413 before the whole upload is read), text fields are collected. `early`
 * runs as soon as the file part starts, with the fields seen so far, so a request whose fields are
 * already known to be bad is rejected before its file is stored. With `memoryBytes`, a file no
 * larger than that is kept in memory (`data`; `dir` is never asked for), a larger one goes on into
 * a file as its bytes arrive.
 */
export async function receiveMultipart(
  request: FastifyRequest,
  dir: string | (() => Promise<string>),
  opts: { maxBytes: number; memoryBytes?: number; early?: (fields: Record<string, string>) => void },
): Promise<ReceivedForm> {
  const fields: Record<string, string> = {};
  const ignored: string[] = [];
  let file: ReceivedFile | undefined;
  const parts = guardedParts(request, {
    limits: { fileSize: opts.maxBytes, fields: 32, fieldSize: 64 * 1024, parts: 40 },
  });
  try {
    for await (const part of parts) {
      if (part.type === 'field') {
        addField(fields, part);
        continue;
      }
      if (part.fieldname !== 'file') {
        // A file part Kilde does not know is skipped like an unknown field.
        ignored.push(part.fieldname);
        await skipPart(part.file);
        continue;
      }
      if (file) throw invalid('Invalid request: exactly one file part is allowed');
      // The part's own name, which no form field vouches for: refused before anything is stored.
      checkFileName(part.filename ?? '', "the file part's filename");
      opts.early?.(fields);
      const stored = await storeFile(part.file, part.filename ?? '', dir, opts);
      // busboy stops at `fileSize` and marks the stream truncated instead of failing it.
      if (part.file.truncated) throw tooLarge(opts.maxBytes);
      const mime = part.mimetype?.split(';')[0]?.trim().toLowerCase();
      file = {
        ...stored,
        filename: part.filename ?? '',
        ...(mime && mime !== 'application/octet-stream' ? { mimeType: mime } : {}),
      };
    }
  } catch (err) {
    if (err instanceof KildeError) throw err;
    const e = err as { code?: unknown; syscall?: unknown; message?: unknown };
    if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(opts.maxBytes);
    // A local file-system failure (disk full) is ours, not the client's.
    if (e.syscall !== undefined) throw err;
    throw invalid(`Malformed multipart body: ${String(e.message ?? err)}`);
  }
  if (!file) throw invalid('Invalid request: the multipart body has no "file" part');
  return { fields, file, ignoredParts: ignored };
}

/**
 * The file part's bytes: in memory when they end within `memoryBytes`, else in a file under `dir`
 * (the bytes read so far first, then the rest as it arrives), the size limit enforced either way.
 */
async function storeFile(
  source: AsyncIterable<Buffer> & NodeJS.ReadableStream,
  filename: string,
  dir: string | (() => Promise<string>),
  opts: { maxBytes: number; memoryBytes?: number },
): Promise<{ path: string; bytes: number; data?: Buffer }> {
  const at = async () => sourcePath(typeof dir === 'string' ? dir : await dir(), filename);
  const keep = Math.min(opts.memoryBytes ?? 0, opts.maxBytes);
  if (keep <= 0) {
    const path = await at();
    return { path, bytes: await streamToFile(source, path, opts.maxBytes) };
  }
  const held: Buffer[] = [];
  let bytes = 0;
  const iterator = source[Symbol.asyncIterator]();
  for (;;) {
    const next = await iterator.next();
    if (next.done) {
      const data = held.length === 1 ? held[0]! : Buffer.concat(held, bytes);
      return { path: '', bytes, data };
    }
    held.push(next.value);
    bytes += next.value.length;
    if (bytes > keep) break;
  }
  // Larger than kept in memory: what came so far, then the rest of the stream, into a file.
  const path = await at();
  const rest = Readable.from(
    (async function* () {
      try {
        yield* held.splice(0);
        for (;;) {
          const next = await iterator.next();
          if (next.done) return;
          yield next.value;
        }
      } finally {
        // Stopped early (over the limit, the disk failed): the part is destroyed, as a pipeline would.
        await iterator.return?.();
      }
    })(),
  );
  return { path, bytes: await streamToFile(rest, path, opts.maxBytes) };
}

/** A text field of a multipart body into `fields`: named once, and text (400 otherwise). */
export function addField(fields: Record<string, string>, part: { fieldname: string; value: unknown }): void {
  if (part.fieldname in fields) throw invalid(`Invalid request: field ${part.fieldname} given twice`);
  if (typeof part.value !== 'string') throw invalid(`Invalid request: field ${part.fieldname} must be text`);
  fields[part.fieldname] = part.value;
}

/**
 * Reads a file part to its end without keeping it. `finished` also settles when the part fails (a
 * body cut short): waiting for 'end' alone hung such a request forever.
 */
export async function skipPart(file: NodeJS.ReadableStream): Promise<void> {
  file.resume();
  await finished(file);
}

/**
 * The parts of a multipart body, as `request.parts(options)` gives them, ended by an error when the
 * client cuts the body short. A client that ends its side of the socket before the body's end (a
 * half-close) gets Node's 400, but the parser's streams are left waiting for bytes that never come:
 * the request hung and its upload folder stayed until restart. Its close ends the wait, with the
 * error that says so, and fails the file part being read.
 */
export async function* guardedParts(
  request: FastifyRequest,
  options: Parameters<FastifyRequest['parts']>[0],
): AsyncGenerator<Multipart> {
  const iterator = request.parts(options)[Symbol.asyncIterator]();
  const cut = cutShort(request);
  let streaming: { destroy(err?: Error): void } | undefined;
  cut.promise.catch((err: Error) => streaming?.destroy(err));
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), cut.promise]);
      if (next.done) return;
      if (next.value.type === 'file') streaming = next.value.file;
      yield next.value;
    }
  } finally {
    cut.dispose();
    // Left early (an error): the parser's iterator is let go without waiting on it.
    iterator.return?.().catch(() => undefined);
  }
}

/**
 * Rejects when the request's socket closes before its body was complete: `dispose` when the body has
 * been read (or the request failed otherwise).
 */
function cutShort(request: FastifyRequest): { promise: Promise<never>; dispose: () => void } {
  const raw = request.raw;
  let reject: (err: Error) => void = () => undefined;
  const promise = new Promise<never>((_, r) => {
    reject = r;
  });
  // Nobody need be waiting when it happens (the file part is being written, or the form was read).
  promise.catch(() => undefined);
  const onClose = () => {
    if (!raw.complete) reject(invalid('Malformed multipart body: the client ended the body before its end'));
  };
  if (raw.destroyed) onClose();
  else raw.once('close', onClose);
  return { promise, dispose: () => raw.off('close', onClose) };
}
