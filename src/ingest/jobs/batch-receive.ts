import { once } from 'node:events';
import { createWriteStream, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { KildeError } from '../../errors.js';
import { tooLarge } from '../byte-limit.js';
import { addField, guardedParts, skipPart } from '../multipart.js';
import {
  checkCollection,
  checkFileName,
  formFields,
  type IngestTarget,
  invalid,
  parseFormIngest,
} from '../request.js';
import { sourcePath } from '../temp-dir.js';
import type { BatchEntry } from './batch.js';
import { holdBytes, releaseHeld } from './batch-held.js';
import { jobErrorOf } from './job.js';

/** One file's own fields in the `files` field of a batch (the rest are the batch's). */
export const batchEntrySchema = z.strictObject({
  file_id: z.string().optional(),
  path: z.string().optional(),
  legacy_path: z.string().optional(),
  filename: z.string().optional(),
});

/** The fields every file of a batch shares; `files` names each file. */
export const batchFieldsSchema = formFields
  .pick({ collection_name: true, collection_type: true, user_id: true, overwrite: true })
  .extend({
    files: z.string().optional().meta({
      description:
        "JSON array, one object per file part in the order they follow: {file_id?, path?, legacy_path?, filename?}. Absent: each file is named by its part's filename, as a browser drop.",
    }),
  });

const SHARED = ['collection_name', 'collection_type', 'user_id', 'overwrite'] as const;

export interface BatchLimits {
  /** `MAX_UPLOAD_BYTES`: a larger file fails alone (413 in its place). */
  maxFileBytes: number;
  /** `JOBS_BATCH_MAX_FILES`. */
  maxFiles: number;
  /** `JOBS_BATCH_MAX_BYTES`: the whole request's files; past it the request is a 413. */
  maxBytes: number;
  /**
   * Keep a file up to this size in memory (`data`, no spool file) while the process's batches may
   * hold it (batch-held.ts): the in-process queue with an engine that reads files from memory. A
   * batch on BullMQ spools every file (another worker may run it after this process is gone).
   */
  memoryFileBytes?: number;
}

/** A received file before its identity is resolved: the fields it was parsed from. */
export interface ReceivedEntry extends BatchEntry {
  fields?: Record<string, string>;
}

/**
 * Reads a batch's multipart body: the shared fields and `files` first (a field after the first
 * file part is a 400), then the `file` parts, each streamed into its own folder under `dir`. A file
 * whose own fields, name or size are refused fails alone (its bytes are skipped); a body that breaks
 * the batch's rules (no files, too many, more bytes than `maxBytes`, parts and entries that do not
 * pair) is a 4xx for the whole request.
 */
export async function receiveBatch(
  request: FastifyRequest,
  dir: string,
  limits: BatchLimits,
): Promise<ReceivedBatch> {
  const out: ReceivedEntry[] = [];
  try {
    return await readBatch(request, dir, limits, out);
  } catch (err) {
    // A refused request keeps nothing: its files in memory are let go as its spool folder is removed.
    releaseHeld(out);
    throw err;
  }
}

export interface ReceivedBatch {
  shared: Record<string, string>;
  entries: ReceivedEntry[];
  ignoredParts: string[];
}

async function readBatch(
  request: FastifyRequest,
  dir: string,
  limits: BatchLimits,
  out: ReceivedEntry[],
): Promise<ReceivedBatch> {
  const fields: Record<string, string> = {};
  const ignored: string[] = [];
  let named: z.infer<typeof batchEntrySchema>[] | undefined;
  let shared: Record<string, string> | undefined;
  let total = 0;
  // A file over MAX_UPLOAD_BYTES is cut there and marked truncated (it fails alone), not an error
  // that ends the body (`throwFileSizeLimit`, an option the types of `parts` leave out).
  const options = {
    throwFileSizeLimit: false,
    limits: {
      fileSize: limits.maxFileBytes,
      files: limits.maxFiles + 16,
      fields: 16,
      fieldSize: 4 << 20,
      parts: limits.maxFiles + 32,
    },
  };
  // A client that half-closes mid-body ends the request (400) and the spool folder goes, as a single upload's.
  const parts = guardedParts(request, options);
  try {
    for await (const part of parts) {
      if (part.type === 'field') {
        if (shared) throw invalid(`Invalid request: field ${part.fieldname} comes after a file part`);
        addField(fields, part);
        continue;
      }
      if (part.fieldname !== 'file') {
        ignored.push(part.fieldname);
        await skipPart(part.file);
        continue;
      }
      // The first file: the batch's own fields are judged before a byte is stored.
      if (!shared) {
        shared = Object.fromEntries(SHARED.flatMap((k) => (fields[k] === undefined ? [] : [[k, fields[k]]])));
        parseFormIngest({ ...shared, file_id: 'check' }, 'check');
        named = fields.files === undefined ? undefined : parseEntries(fields.files, limits.maxFiles);
      }
      const k = out.length;
      if (k >= limits.maxFiles) {
        throw invalid(
          `Invalid request: more than JOBS_BATCH_MAX_FILES (${limits.maxFiles}) files`,
          'tooLarge',
        );
      }
      if (named && k >= named.length) {
        throw invalid(`Invalid request: more file parts than the ${named.length} entries of files`);
      }
      const own = Object.fromEntries(
        Object.entries(named?.[k] ?? {}).filter((e): e is [string, string] => e[1] !== undefined),
      );
      const partName = part.filename ?? '';
      const name = own.filename ?? partName;
      let target: IngestTarget;
      try {
        checkFileName(partName, "the file part's filename");
        target = parseFormIngest({ ...shared, ...own }, partName);
        checkCollection(target);
      } catch (err) {
        await skipPart(part.file);
        out.push({ name, fileId: '', error: refusal(err) });
        continue;
      }
      // `<k>.<ext>`: the place in the batch, and only a plain extension of the client's name.
      const path = join(dir, `${k}${extname(sourcePath(dir, partName))}`);
      const { bytes, data } = await storePart(part.file, path, limits.memoryFileBytes ?? -1);
      total += bytes;
      if (total > limits.maxBytes) {
        releaseHeld([{ name, fileId: '', ...(data ? { data } : {}) }]);
        throw invalid(
          `Invalid request: the files of a batch exceed JOBS_BATCH_MAX_BYTES (${limits.maxBytes} bytes)`,
          'tooLarge',
        );
      }
      // busboy stops a file at MAX_UPLOAD_BYTES and marks it truncated: it fails alone.
      if (part.file.truncated) {
        await rm(path, { force: true });
        out.push({ name, fileId: target.fileId, error: jobErrorOf(tooLarge(limits.maxFileBytes)) });
        continue;
      }
      const mime = part.mimetype?.split(';')[0]?.trim().toLowerCase();
      out.push({
        name,
        fileId: target.fileId,
        target,
        fields: { ...shared, ...own },
        ...(data ? { data } : { path }),
        bytes,
        ...(mime && mime !== 'application/octet-stream' ? { mimeType: mime } : {}),
      });
    }
  } catch (err) {
    if (err instanceof KildeError) throw err;
    const e = err as { code?: unknown; syscall?: unknown; message?: unknown };
    if (e.syscall !== undefined) throw err;
    if (e.code === 'FST_FILES_LIMIT' || e.code === 'FST_PARTS_LIMIT') {
      throw invalid(`Invalid request: more than JOBS_BATCH_MAX_FILES (${limits.maxFiles}) files`, 'tooLarge');
    }
    throw invalid(`Malformed multipart body: ${String(e.message ?? err)}`);
  }
  if (!shared || out.length === 0) throw invalid('Invalid request: the multipart body has no "file" part');
  if (named && out.length < named.length) {
    throw invalid(`Invalid request: ${named.length} entries in files but ${out.length} file parts`);
  }
  return { shared, entries: out, ignoredParts: ignored };
}

/** A file part held in memory up to this size, then written in one call; a larger one streams to disk. */
const IN_ONE_WRITE = 1 << 20;

/**
 * A file part's bytes: kept in memory (`data`) when they end within `keepBytes` and the process's
 * batches may hold them (batch-held.ts), else written to `path` (a new file, mode 0600). A batch is
 * mostly small files: each is gathered and written with one synchronous call (one open, write and
 * close, no stream machinery: a third of the receiving side's CPU went to write streams); past
 * `IN_ONE_WRITE` the rest streams. busboy already caps the part at `MAX_UPLOAD_BYTES` (a truncated
 * part is never kept).
 */
async function storePart(
  part: AsyncIterable<Buffer> & { truncated?: boolean },
  path: string,
  keepBytes: number,
): Promise<{ bytes: number; data?: Buffer }> {
  let chunks: Buffer[] = [];
  let size = 0;
  let out: ReturnType<typeof createWriteStream> | undefined;
  let error: Error | undefined;
  for await (const chunk of part) {
    size += chunk.length;
    if (error) throw error;
    if (!out) {
      chunks.push(chunk);
      if (size <= IN_ONE_WRITE) continue;
      out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
      out.on('error', (err) => {
        error = err;
      });
      for (const c of chunks) out.write(c);
      chunks = [];
    } else if (!out.write(chunk)) await once(out, 'drain');
  }
  if (!out) {
    const data = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
    if (size <= keepBytes && part.truncated !== true && holdBytes(size)) return { bytes: size, data };
    writeFileSync(path, data, { flag: 'wx', mode: 0o600 });
    return { bytes: size };
  }
  out.end();
  await once(out, 'finish');
  return { bytes: size };
}

function parseEntries(text: string, max: number): z.infer<typeof batchEntrySchema>[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw invalid('Invalid request: files must be a JSON array');
  }
  const parsed = z.array(batchEntrySchema).max(max).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(
      `Invalid request: files${issue?.path.length ? `[${issue.path.join('.')}]` : ''}: ${issue?.message}`,
    );
  }
  return parsed.data;
}

/** A file refused at the door: its code and message as a job's failure. */
function refusal(err: unknown) {
  if (err instanceof KildeError) return jobErrorOf(err);
  throw err;
}
