import { createWriteStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { KildeError } from '../errors.js';

export function tooLarge(maxBytes: number): KildeError {
  return new KildeError('INVALID_REQUEST', `File exceeds MAX_UPLOAD_BYTES (${maxBytes} bytes)`, {
    variant: 'tooLarge',
  });
}

/** Counts bytes passing through and fails with 413 as soon as they exceed `maxBytes`. */
class ByteLimit extends Transform {
  bytes = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) done(tooLarge(this.maxBytes));
    else done(null, chunk);
  }
}

/**
 * Streams `source` into a new file at `path`, never holding more than a stream buffer in memory, and
 * enforces the size limit on the bytes actually received (a declared size may lie). Returns the size.
 */
export async function streamToFile(
  source: NodeJS.ReadableStream,
  path: string,
  maxBytes: number,
): Promise<number> {
  const limit = new ByteLimit(maxBytes);
  await pipeline(source, limit, createWriteStream(path, { flags: 'wx', mode: 0o600 }));
  return limit.bytes;
}
