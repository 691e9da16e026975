import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { KildeApp, PartContext } from '../../http/app.js';
import { BODY_LIMITS, JSON_SHAPES } from '../../http/body-limits.js';
import { receiveMultipart } from '../multipart.js';
import type { ObjectStore } from '../object-store.js';
import {
  checkCollection,
  FORM_FIELDS,
  type IngestTarget,
  JSON_FIELDS,
  parseFormIngest,
  parseJsonIngest,
  unknownFields,
} from '../request.js';
import { jobDocs } from '../route-docs.js';
import { streamEvents } from './event-stream.js';
import {
  isTerminal,
  JOB_STATES,
  type Job,
  type JobPayload,
  type JobQueue,
  jobNotFound,
  jobSchema,
} from './job.js';
import { releaseSpool, spoolDir } from './runner.js';

export interface JobRouteDeps {
  queue: () => JobQueue;
  objectStore: ObjectStore;
  maxBytes: number;
  /** `JOBS_SPOOL_DIR` resolved. */
  spool: string;
  /** Names an upload without a file_id by its path (`identifyUpload`, src/ingest/file-identity.ts). */
  identify?: (target: IngestTarget, fields: Record<string, string>) => Promise<IngestTarget>;
  /** Comment lines on an idle event stream, so proxies keep it open (ms). */
  keepAliveMs?: number;
}

const jobParams = z.object({ job_id: z.string().trim().min(1).max(200) });
const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  state: z.enum(JOB_STATES).optional(),
});

/**
 * The jobs API (issue 14; the API contract's Jobs section), registered inside the ingest part so it
 * shares its multipart parser and its error body `{status: false, error, code}`.
 */
export function registerJobRoutes(app: KildeApp, ctx: PartContext, deps: JobRouteDeps): void {
  const logIgnored = (request: FastifyRequest, fields: string[]) => {
    if (fields.length > 0) request.log.debug({ fields }, 'ignored unknown job field(s)');
  };

  app.post(
    '/api/v1/jobs',
    {
      onRequest: ctx.auth,
      bodyLimit: BODY_LIMITS.ingest,
      schema: { response: { 202: jobSchema } },
      config: { jsonShape: JSON_SHAPES.ingest, docs: jobDocs },
    },
    async (request, reply) => {
      const id = randomUUID();
      const payload = request.isMultipart() ? await spoolUpload(request, id) : objectPayload(request);
      let job: Job;
      try {
        job = await deps.queue().submit(payload, id);
      } catch (err) {
        await releaseSpool(payload);
        throw err;
      }
      request.log.info({ jobId: job.job_id, fileId: job.file_id, source: payload.source.kind }, 'job queued');
      return reply.code(202).send(job);
    },
  );

  /** The object-store reference is gated now (shape, bucket allowlist, tenant rules); the worker fetches it. */
  function objectPayload(request: FastifyRequest): JobPayload {
    const req = parseJsonIngest(request.body);
    logIgnored(request, unknownFields(request.body, JSON_FIELDS));
    deps.objectStore.check(req.bucket, req.key);
    checkCollection(req);
    const { bucket, key, ...target } = req;
    return { target, source: { kind: 'object', bucket, key } };
  }

  /** The upload streams into its own spool folder (size limit as it arrives); removed on any failure. */
  async function spoolUpload(request: FastifyRequest, id: string): Promise<JobPayload> {
    const dir = await spoolDir(deps.spool, id);
    try {
      const form = await receiveMultipart(request, dir, {
        maxBytes: deps.maxBytes,
        early: (fields) => {
          if ('file_id' in fields && 'collection_name' in fields && 'user_id' in fields) {
            checkCollection(parseFormIngest(fields, 'upload'));
          }
        },
      });
      const parsed = parseFormIngest(form.fields, form.file.filename);
      const target = deps.identify ? await deps.identify(parsed, form.fields) : parsed;
      checkCollection(target);
      logIgnored(request, [...unknownFields(form.fields, FORM_FIELDS), ...form.ignoredParts]);
      return {
        target,
        source: {
          kind: 'spool',
          path: form.file.path,
          bytes: form.file.bytes,
          ...(form.file.mimeType ? { mimeType: form.file.mimeType } : {}),
        },
      };
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  app.get(
    '/api/v1/jobs',
    {
      onRequest: ctx.auth,
      schema: { querystring: listQuery, response: { 200: z.object({ jobs: z.array(jobSchema) }) } },
    },
    async (request) => ({ jobs: await deps.queue().list(request.query.limit, request.query.state) }),
  );

  app.get(
    '/api/v1/jobs/:job_id',
    { onRequest: ctx.auth, schema: { params: jobParams, response: { 200: jobSchema } } },
    async (request) => {
      const job = await deps.queue().get(request.params.job_id);
      if (!job) throw jobNotFound(request.params.job_id);
      return job;
    },
  );

  app.delete(
    '/api/v1/jobs/:job_id',
    { onRequest: ctx.auth, schema: { params: jobParams, response: { 200: jobSchema } } },
    async (request) => deps.queue().cancel(request.params.job_id),
  );

  /**
   * Server-sent events: `event: job` with the whole Job on every change, the current state first,
   * the stream ends after a terminal state (or when the client leaves).
   */
  app.get(
    '/api/v1/jobs/:job_id/events',
    { onRequest: ctx.auth, schema: { params: jobParams } },
    async (request, reply) => {
      const queue = deps.queue();
      const id = request.params.job_id;
      const first = await queue.get(id);
      if (!first) throw jobNotFound(id);
      let last = '';
      streamEvents(request, reply, deps.keepAliveMs ?? 15_000, {
        id,
        first,
        read: () => queue.get(id),
        subscribe: (fn) => queue.subscribe(fn),
        what: 'job',
        render: (job) => {
          const data = JSON.stringify(job);
          const text = data === last ? '' : `event: job\ndata: ${data}\n\n`;
          last = data;
          return { text, end: isTerminal(job.state) };
        },
      });
    },
  );
}
