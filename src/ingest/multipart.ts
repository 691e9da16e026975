import { finished } from 'node:stream/promises';
import type {} from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { KildeError } from '../http/errors.js';
import { streamToFile, tooLarge } from './byte-limit.js';
import { checkFileName, invalid } from './request.js';
import { sourcePath } from './temp-dir.js';

export interface ReceivedFile {
  path: string;
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
 * already known to be bad is rejected before its file is stored.
 */
export async function receiveMultipart(
  request: FastifyRequest,
  dir: string,
  opts: { maxBytes: number; early?: (fields: Record<string, string>) => void },
): Promise<ReceivedForm> {
  const fields: Record<string, string> = {};
  const ignored: string[] = [];
  let file: ReceivedFile | undefined;
  const parts = request.parts({
    limits: { fileSize: opts.maxBytes, fields: 32, fieldSize: 64 * 1024, parts: 40 },
  });
  try {
    for await (const part of parts) {
      if (part.type === 'field') {
        if (part.fieldname in fields)
          throw invalid(400, `Invalid request: field ${part.fieldname} given twice`);
        if (typeof part.value !== 'string')
          throw invalid(400, `Invalid request: field ${part.fieldname} must be text`);
        fields[part.fieldname] = part.value;
        continue;
      }
      if (part.fieldname !== 'file') {
        // A file part Kilde does not know is skipped like an unknown field.
        ignored.push(part.fieldname);
        part.file.resume();
        // `finished` also settles when the part fails (a body cut short): waiting for 'end' alone
        // hung such a request forever.
        await finished(part.file);
        continue;
      }
      if (file) throw invalid(400, 'Invalid request: exactly one file part is allowed');
      // The part's own name, which no form field vouches for: refused before anything is stored.
      checkFileName(part.filename ?? '', "the file part's filename");
      opts.early?.(fields);
      const path = sourcePath(dir, part.filename ?? '');
      const bytes = await streamToFile(part.file, path, opts.maxBytes);
      // busboy stops at `fileSize` and marks the stream truncated instead of failing it.
      if (part.file.truncated) throw tooLarge(opts.maxBytes);
      const mime = part.mimetype?.split(';')[0]?.trim().toLowerCase();
      file = {
        path,
        bytes,
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
    throw invalid(400, `Malformed multipart body: ${String(e.message ?? err)}`);
  }
  if (!file) throw invalid(400, 'Invalid request: the multipart body has no "file" part');
  return { fields, file, ignoredParts: ignored };
}
