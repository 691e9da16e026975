import { openAsBlob } from 'node:fs';
import type { Job } from '../ingest/jobs/job.js';
import { errorFromBody, type IngestArgs } from './backend.js';
import { CliError } from './fail.js';

/** The jobs API of a running Kilde (`POST /api/v1/jobs`, `GET …/{id}`, `GET …/{id}/events`). */
export interface JobClient {
  submit(args: IngestArgs): Promise<Job>;
  /** undefined: the server does not know the job (never submitted, or gone from its history). */
  get(id: string): Promise<Job | undefined>;
  /** Follows the job's events until it ends; `onJob` sees every state. Resolves with the last one. */
  watch(id: string, onJob: (job: Job) => void, signal?: AbortSignal): Promise<Job>;
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
      let buffer = '';
      const decoder = new TextDecoder();
      for await (const bytes of res.body) {
        buffer += decoder.decode(bytes as Uint8Array, { stream: true });
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n');
          if (!block.split('\n').includes('event: job') || data === '') continue;
          last = JSON.parse(data) as Job;
          onJob(last);
        }
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
  };
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
