import { openAsBlob } from 'node:fs';
import type { BatchFile, JobBatch } from '../ingest/jobs/batch.js';
import type { Job } from '../ingest/jobs/job.js';
import { errorFromBody, type IngestArgs } from './backend.js';
import { CliError } from './fail.js';
import { multipartBody } from './multipart-body.js';

/** A file of a job batch: its bytes when the client already read them (a small file), else read from `path`. */
export type BatchUpload = IngestArgs & { data?: Uint8Array };

/** The jobs API of a running Kilde (`POST /api/v1/jobs`, `GET …/{id}`, `GET …/{id}/events`). */
export interface JobClient {
  submit(args: IngestArgs): Promise<Job>;
  /** undefined: the server does not know the job (never submitted, or gone from its history). */
  get(id: string): Promise<Job | undefined>;
  /** Follows the job's events until it ends; `onJob` sees every state. Resolves with the last one. */
  watch(id: string, onJob: (job: Job) => void, signal?: AbortSignal): Promise<Job>;
  /**
   * Many files in one request (`POST /api/v1/job-batches`), sharing the collection and user;
   * undefined when the server has no batches (an older Kilde): submit one job per file instead.
   */
  submitBatch(files: readonly BatchUpload[]): Promise<JobBatch | undefined>;
  /** undefined: the server does not know the batch. */
  getBatch(id: string): Promise<JobBatch | undefined>;
  /** Follows the batch's events until it ends; `onFile` sees each file's changes. Resolves with the whole batch. */
  watchBatch(id: string, onFile: (file: BatchFile) => void, signal?: AbortSignal): Promise<JobBatch>;
}

/** The events of a `text/event-stream` body: each block's event name and data. */
async function* serverEvents(
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<{ event: string; data: string }> {
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const lines = buffer.slice(0, end).split('\n');
      buffer = buffer.slice(end + 2);
      const event =
        lines
          .find((l) => l.startsWith('event:'))
          ?.slice(6)
          .trim() ?? 'message';
      const data = lines
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data !== '') yield { event, data };
    }
  }
}

export function createJobClient(o: { base: string; apiKey: string; fetch?: typeof fetch }): JobClient {
  const doFetch = o.fetch ?? fetch;
  const auth = { authorization: `Bearer ${o.apiKey}` };

  async function call(what: string, path: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await doFetch(`${o.base}${path}`, { ...init, headers: { ...auth, ...init.headers } });
    } catch (err) {
      if (init.signal?.aborted) throw err;
      const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
      throw new CliError(`${what}: cannot reach ${o.base}${cause}`);
    }
  }

  async function body(res: Response): Promise<unknown> {
    const text = await res.text();
    try {
      return text === '' ? undefined : JSON.parse(text);
    } catch {
      return text;
    }
  }

  return {
    async submit(a) {
      const form = await uploadForm(a);
      const res = await call('submit', '/api/v1/jobs', { method: 'POST', body: form });
      const b = await body(res);
      if (res.status !== 202) throw errorFromBody(res.status, b, 'submit');
      return b as Job;
    },
    async get(id) {
      const res = await call('job', `/api/v1/jobs/${encodeURIComponent(id)}`);
      const b = await body(res);
      if (res.status === 404) return undefined;
      if (!res.ok) throw errorFromBody(res.status, b, 'job');
      return b as Job;
    },
    async watch(id, onJob, signal) {
      const res = await call('job events', `/api/v1/jobs/${encodeURIComponent(id)}/events`, {
        ...(signal ? { signal } : {}),
      });
      if (!res.ok || !res.body) throw errorFromBody(res.status, await body(res), 'job events');
      let last: Job | undefined;
      for await (const e of serverEvents(res.body as AsyncIterable<Uint8Array>)) {
        if (e.event !== 'job') continue;
        last = JSON.parse(e.data) as Job;
        onJob(last);
      }
      // The stream ends after a terminal state; ending before one means the connection was cut.
      if (!last || !['done', 'failed', 'cancelled'].includes(last.state)) {
        const now = await this.get(id);
        if (!now) throw new CliError(`job ${id}: the server no longer knows it`);
        if (!['done', 'failed', 'cancelled'].includes(now.state)) return this.watch(id, onJob, signal);
        onJob(now);
        return now;
      }
      return last;
    },
    async submitBatch(files) {
      const res = await call('submit', '/api/v1/job-batches', {
        method: 'POST',
        ...(await batchBody(files)),
      });
      const b = await body(res);
      if (res.status === 404 || res.status === 405) return undefined;
      if (res.status !== 202) throw errorFromBody(res.status, b, 'submit');
      return b as JobBatch;
    },
    async getBatch(id) {
      const res = await call('job batch', `/api/v1/job-batches/${encodeURIComponent(id)}`);
      const b = await body(res);
      if (res.status === 404) return undefined;
      if (!res.ok) throw errorFromBody(res.status, b, 'job batch');
      return b as JobBatch;
    },
    async watchBatch(id, onFile, signal) {
      const res = await call('job batch events', `/api/v1/job-batches/${encodeURIComponent(id)}/events`, {
        ...(signal ? { signal } : {}),
      });
      if (!res.ok || !res.body) throw errorFromBody(res.status, await body(res), 'job batch events');
      let last: JobBatch | undefined;
      for await (const e of serverEvents(res.body as AsyncIterable<Uint8Array>)) {
        if (e.event === 'file') onFile(JSON.parse(e.data) as BatchFile);
        else if (e.event === 'batch') last = JSON.parse(e.data) as JobBatch;
      }
      if (last && (last.state === 'done' || last.state === 'failed')) return last;
      // Cut before the end: ask again, and follow it again while it runs.
      const now = await this.getBatch(id);
      if (!now) throw new CliError(`job batch ${id}: the server no longer knows it`);
      if (now.state !== 'done' && now.state !== 'failed') return this.watchBatch(id, onFile, signal);
      return now;
    },
  };
}

/**
 * The multipart body of a batch: the shared fields, `files` naming each file (by path as
 * `uploadForm` does, or by file_id), then the files in that order. When every file's bytes are in
 * memory it is one buffer (`multipartBody`); else a `FormData` whose files are read from disk as it
 * is sent.
 */
export async function batchBody(
  files: readonly BatchUpload[],
): Promise<{ body: Uint8Array | FormData; headers?: Record<string, string> }> {
  const first = files[0];
  if (!first) throw new CliError('a job batch needs at least one file');
  const fields = [
    { name: 'collection_name', value: first.collection },
    { name: 'user_id', value: first.userId },
    {
      name: 'files',
      value: JSON.stringify(
        files.map((a) =>
          a.legacy === undefined
            ? { file_id: a.fileId, filename: a.filename }
            : { path: a.source, legacy_path: a.legacy, filename: a.filename },
        ),
      ),
    },
  ];
  if (files.every((a) => a.data !== undefined)) {
    const { body, contentType } = multipartBody([
      ...fields,
      ...files.map((a) => ({ name: 'file', filename: a.filename, data: a.data! })),
    ]);
    return { body, headers: { 'content-type': contentType } };
  }
  const form = new FormData();
  for (const f of fields) form.set(f.name, f.value);
  for (const a of files) {
    form.append('file', a.data ? new Blob([a.data]) : await openAsBlob(a.path), a.filename);
  }
  return { body: form };
}

/** The multipart body of an upload (`PUT /api/v1/ingest`, `POST /api/v1/jobs`). */
export async function uploadForm(a: IngestArgs): Promise<FormData> {
  const form = new FormData();
  // Fields before the file: the server judges them before storing a byte of it.
  if (a.legacy === undefined) form.set('file_id', a.fileId);
  else {
    form.set('path', a.source);
    form.set('legacy_path', a.legacy);
  }
  form.set('filename', a.filename);
  form.set('collection_name', a.collection);
  form.set('user_id', a.userId);
  form.set('file', await openAsBlob(a.path), a.filename);
  return form;
}
