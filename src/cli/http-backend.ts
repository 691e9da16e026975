import { openAsBlob } from 'node:fs';
import { evalRunSchema, type RunSummary } from '../eval/run.js';
import {
  type Backend,
  type DocumentSummary,
  type ExtractResult,
  errorFromBody,
  type SearchResult,
} from './backend.js';
import { CliError } from './fail.js';
import { createJobClient, uploadForm } from './job-client.js';

export interface HttpBackendOptions {
  url: string;
  apiKey: string;
  fetch?: typeof fetch;
}

/** The CLI against a running Kilde (`--url`): the same routes the chat platform calls. */
export function createHttpBackend(o: HttpBackendOptions): Backend {
  const base = o.url.replace(/\/+$/, '');
  const doFetch = o.fetch ?? fetch;
  const auth = { authorization: `Bearer ${o.apiKey}` };

  async function call(what: string, path: string, init: RequestInit): Promise<unknown> {
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, { ...init, headers: { ...auth, ...init.headers } });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
      throw new CliError(`${what}: cannot reach ${base}${cause}`);
    }
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      // not JSON: keep the text for the message
    }
    if (!res.ok) throw errorFromBody(res.status, body, what);
    return body;
  }

  const json = (what: string, method: string, path: string, body?: unknown) =>
    call(what, path, {
      method,
      ...(body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });

  return {
    mode: 'http',
    url: base,
    jobs: createJobClient({ base, apiKey: o.apiKey, ...(o.fetch ? { fetch: o.fetch } : {}) }),
    // POST /search answers an unknown collection with empty lists, as the contract wants.
    missingCollections: async () => [],
    async prepare() {
      // Fails fast, once, when the server is not there (rather than once per file).
      await call('connect', '/health', { method: 'GET' });
    },
    async ingest(a) {
      const form = await uploadForm(a);
      const body = (await call('ingest', '/api/v1/ingest', { method: 'PUT', body: form })) as {
        chunks_count: number;
        file_id?: string;
        extraction?: { engine: string };
      };
      return {
        chunks: body.chunks_count,
        ...(body.file_id ? { fileId: body.file_id } : {}),
        ...(body.extraction ? { engine: body.extraction.engine } : {}),
      };
    },
    async search(args) {
      return (await json('search', 'POST', '/search', args)) as SearchResult;
    },
    async evaluate(body) {
      return evalRunSchema.parse(await json('eval', 'POST', '/api/v1/eval', body));
    },
    async listRuns() {
      return ((await json('eval runs', 'GET', '/api/v1/eval/runs')) as { runs: RunSummary[] }).runs;
    },
    async getRun(id) {
      return evalRunSchema.parse(
        await json('eval run', 'GET', `/api/v1/eval/runs/${encodeURIComponent(id)}`),
      );
    },
    async extract(path, engine) {
      const form = new FormData();
      if (engine) form.set('engine', engine);
      form.set('file', await openAsBlob(path), path.split(/[\\/]/).at(-1) ?? 'file');
      return (await call('extract', '/api/v1/extract', { method: 'POST', body: form })) as ExtractResult;
    },
    async deleteDocument(fileId) {
      return (await json('delete', 'DELETE', `/api/v1/documents/${encodeURIComponent(fileId)}`)) as Record<
        string,
        unknown
      >;
    },
    async chunks(fileId, query) {
      const qs = new URLSearchParams(query).toString();
      return (await json(
        'chunks',
        'GET',
        `/api/v1/documents/${encodeURIComponent(fileId)}/chunks${qs ? `?${qs}` : ''}`,
      )) as Record<string, unknown>;
    },
    async listDocuments(collection) {
      const out: DocumentSummary[] = [];
      let cursor: string | null = null;
      do {
        const qs = new URLSearchParams({ limit: '200', ...(cursor === null ? {} : { cursor }) });
        const page = (await json(
          'documents',
          'GET',
          `/api/v1/collections/${encodeURIComponent(collection)}/documents?${qs}`,
        )) as {
          documents: { file_id: string; name: string | null; chunks: number; live_version: string | null }[];
          next_cursor: string | null;
        };
        for (const d of page.documents) {
          out.push({
            file_id: d.file_id,
            name: d.name,
            source: null,
            chunks: d.chunks,
            ingest_version: d.live_version,
          });
        }
        cursor = page.next_cursor;
      } while (cursor !== null);
      return out;
    },
    async versions(fileId, collection) {
      const qs = collection === undefined ? '' : `?${new URLSearchParams({ collection_name: collection })}`;
      return (await json(
        'versions',
        'GET',
        `/api/v1/documents/${encodeURIComponent(fileId)}/versions${qs}`,
      )) as Record<string, unknown>;
    },
    async restore(fileId, version, collection) {
      return (await json(
        'restore',
        'POST',
        `/api/v1/documents/${encodeURIComponent(fileId)}/versions/${encodeURIComponent(version)}/restore`,
        collection === undefined ? {} : { collection_name: collection },
      )) as Record<string, unknown>;
    },
    async close() {},
  };
}
