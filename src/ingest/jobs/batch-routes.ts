import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { z } from 'zod';
import { KildeError } from '../../errors.js';
import type { KildeApp, PartContext } from '../../http/app.js';
import { multipartForm, type RouteDocs } from '../../http/openapi.js';
import type { IngestTarget } from '../request.js';
import { type BatchPayload, type BatchQueue, batchSchema, isBatchTerminal, type JobBatch } from './batch.js';
import { releaseHeld } from './batch-held.js';
import { type BatchLimits, batchFieldsSchema, type ReceivedEntry, receiveBatch } from './batch-receive.js';
import { streamEvents } from './event-stream.js';
import { jobErrorOf } from './job.js';
import { spoolDir } from './runner.js';

export interface BatchRouteDeps {
  batches: () => BatchQueue;
  limits: BatchLimits;
  /** `JOBS_SPOOL_DIR` resolved. */
  spool: string;
  /** Names the uploads without a file_id by their paths, in one lookup (`identifyUploads`). */
  identify?: (
    uploads: readonly { target: IngestTarget; fields: Record<string, string> }[],
  ) => Promise<Array<IngestTarget | KildeError>>;
  /** Comment lines on an idle event stream, so proxies keep it open (ms). */
  keepAliveMs?: number;
  /**
   * Whether a batch's small files may stay in memory (batch-held.ts): the queue is this process's
   * and its extraction engine reads files from memory.
   */
  inMemory?: () => boolean;
}

/** A batch's files up to this size stay in memory (as a single upload's, src/ingest/routes.ts) when `inMemory`. */
const IN_MEMORY_BYTES = 64 * 1024;

const batchParams = z.object({ batch_id: z.string().trim().min(1).max(200) });

const submitDocs: RouteDocs = {
  summary:
    'Queue the ingestion of many files in one multipart request (shared fields, then one "file" part per file); each file settles on its own',
  body: { 'multipart/form-data': multipartForm(batchFieldsSchema) },
  responses: { 202: batchSchema },
};

function batchNotFound(id: string): KildeError {
  return new KildeError('JOB_NOT_FOUND', `No job batch ${JSON.stringify(id)}`);
}

/**
 * Job batches (docs/scaling.md, "Job batches"): `POST /api/v1/job-batches`, `GET …/{batch_id}` and
 * `GET …/{batch_id}/events`, registered inside the ingest part beside the jobs API, with its auth.
 */
export function registerBatchRoutes(app: KildeApp, ctx: PartContext, deps: BatchRouteDeps): void {
  app.post(
    '/api/v1/job-batches',
    { onRequest: ctx.auth, schema: { response: { 202: batchSchema } }, config: { docs: submitDocs } },
    async (request, reply) => {
      if (!request.isMultipart()) {
        throw new KildeError(
          'INVALID_REQUEST',
          'POST /api/v1/job-batches takes a multipart body: the shared fields, then one "file" part per file',
          { variant: 'unsupportedMediaType' },
        );
      }
      const id = randomUUID();
      const dir = await spoolDir(deps.spool, id);
      const limits = deps.inMemory?.() ? { ...deps.limits, memoryFileBytes: IN_MEMORY_BYTES } : deps.limits;
      let received: ReceivedEntry[] = [];
      let batch: JobBatch;
      try {
        const form = await receiveBatch(request, dir, limits);
        received = form.entries;
        const files = await identified(form.entries);
        received = files;
        const payload: BatchPayload = {
          collectionName: form.shared.collection_name ?? '',
          dir,
          files,
        };
        if (form.ignoredParts.length > 0)
          request.log.debug({ parts: form.ignoredParts }, 'ignored file parts');
        batch = await deps.batches().submit(payload, id);
      } catch (err) {
        releaseHeld(received);
        await rm(dir, { recursive: true, force: true });
        throw err;
      }
      request.log.info(
        { batchId: id, files: batch.counts.files, refused: batch.counts.failed },
        'job batch queued',
      );
      return reply.code(202).send(batch);
    },
  );

  /** The files named by their paths take the ids of the documents those paths name, in one lookup. */
  async function identified(entries: ReceivedEntry[]): Promise<ReceivedEntry[]> {
    const identify = deps.identify;
    const at = entries.flatMap((e, i) => (e.target && e.fields ? [i] : []));
    if (!identify || at.length === 0) return entries.map(({ fields: _, ...e }) => e);
    const found = await identify(
      at.map((i) => ({ target: entries[i]!.target!, fields: entries[i]!.fields! })),
    );
    const out = entries.map(({ fields: _, ...e }) => e as ReceivedEntry);
    at.forEach((i, k) => {
      const f = found[k]!;
      const { target: _, ...rest } = out[i]!;
      out[i] =
        f instanceof KildeError
          ? { ...rest, error: jobErrorOf(f) }
          : { ...out[i]!, target: f, fileId: f.fileId };
    });
    return out;
  }

  app.get(
    '/api/v1/job-batches/:batch_id',
    { onRequest: ctx.auth, schema: { params: batchParams, response: { 200: batchSchema } } },
    async (request) => {
      const batch = await deps.batches().get(request.params.batch_id);
      if (!batch) throw batchNotFound(request.params.batch_id);
      return batch;
    },
  );

  /**
   * Server-sent events: `event: batch` with the whole batch first; `event: file` with a file's record
   * each time one changes (running, done, failed, queued again for a retry); `event: batch` again once
   * the batch has ended, then the stream ends (or when the client leaves).
   */
  app.get(
    '/api/v1/job-batches/:batch_id/events',
    { onRequest: ctx.auth, schema: { params: batchParams } },
    async (request, reply) => {
      const queue = deps.batches();
      const id = request.params.batch_id;
      const first = await queue.get(id);
      if (!first) throw batchNotFound(id);
      let seen: string[] | undefined;
      let lastState = '';
      streamEvents(request, reply, deps.keepAliveMs ?? 15_000, {
        id,
        first,
        read: () => queue.get(id),
        subscribe: (fn) => queue.subscribe(fn),
        what: 'job batch',
        render: (batch) => {
          const files = batch.files.map((f) => JSON.stringify(f));
          const ended = isBatchTerminal(batch.state);
          let text = '';
          if (!seen) text = `event: batch\ndata: ${JSON.stringify(batch)}\n\n`;
          else {
            const before = seen;
            text = files
              .filter((f, i) => f !== before[i])
              .map((f) => `event: file\ndata: ${f}\n\n`)
              .join('');
            if (ended) text += `event: batch\ndata: ${JSON.stringify(batch)}\n\n`;
            else if (batch.state !== lastState) {
              const { files: _, ...head } = batch;
              text += `event: state\ndata: ${JSON.stringify(head)}\n\n`;
            }
          }
          seen = files;
          lastState = batch.state;
          return { text, end: ended };
        },
      });
    },
  );
}
