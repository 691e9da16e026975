import { EventSourceParserStream } from 'eventsource-parser/stream';

/**
 * The console's whole view of Kilde: the public HTTP API (docs/api-contract shapes), called with the
 * bearer key the user signed in with. The console adds no endpoint of its own.
 */

export type JobState = 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
export type JobStage = 'fetch' | 'upload' | 'convert' | 'chunk' | 'embed' | 'sparse' | 'write';
export const STAGES: readonly JobStage[] = ['upload', 'convert', 'chunk', 'embed', 'sparse', 'write'];
export const TERMINAL: readonly JobState[] = ['done', 'failed', 'cancelled'];

export interface Job {
  job_id: string;
  state: JobState;
  stage: JobStage | null;
  file_id: string;
  collection_name: string;
  name: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  progress: { chunks_total: number | null; chunks_done: number };
  attempts: number;
  result: { status: true; collection_name: string; chunks_count: number } | null;
  /** `stage`: where the run failed (servers before it say nothing). */
  error: { code: string; message: string; stage?: JobStage | null } | null;
}

/** `GET /api/v1/info` as the server sends it: `search` only with a search part, `ingest` only with ingestion. */
export interface ServerInfo {
  version: string;
  services: string[];
  search?: {
    modes_available: { hybrid: boolean; rerank: boolean; agentic: boolean };
    default_k: number;
    max_k: number;
  };
  ingest?: {
    max_upload_bytes: number;
    engines: string[];
    /** Characters of extracted text a file may have (older servers do not say). */
    max_text_chars?: number;
    /** Chunks are embedded (false: lexical-only, no embed stage); older servers do not say. */
    dense?: boolean;
    sparse?: boolean;
  };
  keep_versions?: number;
}

/** What the console works with: which screens the server serves, and the search settings. */
export interface Info extends ServerInfo {
  search: NonNullable<ServerInfo['search']>;
  /** The server searches (`POST /search`): the playground is offered. */
  searches: boolean;
  /** The server ingests (jobs): the upload screen is offered. */
  ingests: boolean;
}

const NO_MODES = {
  modes_available: { hybrid: false, rerank: false, agentic: false },
  default_k: 5,
  max_k: 100,
};

/** What the console assumes of a server that does not say (no `GET /api/v1/info`): every screen, no toggles. */
export const WITHOUT_INFO: Info = {
  version: 'unknown',
  services: [],
  search: NO_MODES,
  searches: true,
  ingests: true,
};

export interface Collection {
  name: string;
  files: number;
  chunks: number;
  last_ingest: string | null;
}

export interface DocumentRow {
  file_id: string;
  name: string | null;
  chunks: number;
  live_version: string | null;
  languages: string[];
  engine: string | null;
  written_at: string | null;
}

export interface Version {
  version: string;
  written_at: string | null;
  chunks: number;
  engine: string | null;
  source: string | null;
  content_hash: string | null;
  live: boolean;
}

export interface ChunkMeta {
  split_id: number;
  headers?: string[];
  page_number?: number;
  pages?: number[];
  char_start?: number;
  char_end?: number;
  languages?: string[];
  extractor?: string;
  extraction_engine?: string;
  extraction_route?: string;
  vision_profile?: string | null;
  name?: string;
  [extra: string]: unknown;
}

export interface ChunkPage {
  file_id: string;
  returned: number;
  next_offset?: string;
  stats: {
    total_chunks: number;
    extraction_engine: string | null;
    languages: string[];
    name: string | null;
    collection_name: string | null;
  };
  chunks: { split_id: number; content_length: number; content?: string; meta: ChunkMeta }[];
}

export interface Explanation {
  path: 'dense' | 'lexical' | 'hybrid' | 'rerank' | 'fallback' | 'agentic';
  dense: { rank: number; score: number } | null;
  lexical: { rank: number; score: number } | null;
  fused: number | null;
  rerank: number | null;
  score: number;
}

export interface SearchRequest {
  queries: string[];
  collection_names: string[];
  k: number;
  pipeline?: { hybrid?: boolean; rerank?: boolean; agentic?: boolean };
  explain?: boolean;
}

export interface SearchResponse {
  documents: string[][];
  metadatas: Record<string, unknown>[][];
  distances: number[][];
  explanations?: Explanation[][];
  timings_ms?: Record<string, number>;
}

/** A failed call: the HTTP status and the error code and message from either error envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Reads `{detail, code}` (kernel) or `{status:false, error, code}` (ingestion) into an ApiError. */
async function failure(res: Response): Promise<ApiError> {
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    body = undefined;
  }
  const b = (body ?? {}) as { detail?: unknown; error?: unknown; code?: unknown };
  const message =
    typeof b.error === 'string'
      ? b.error
      : typeof b.detail === 'string'
        ? b.detail
        : `${res.status} ${res.statusText}`;
  const code =
    typeof b.code === 'string' ? b.code : res.status === 401 ? 'UNAUTHORIZED' : `HTTP_${res.status}`;
  return new ApiError(res.status, code, message);
}

export class Api {
  constructor(
    readonly key: string,
    private readonly base = '',
  ) {}

  private async call<T>(method: string, path: string, body?: unknown | FormData): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    let payload: BodyInit | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers,
      credentials: 'omit',
      ...(payload === undefined ? {} : { body: payload }),
    });
    if (!res.ok) throw await failure(res);
    return (await res.json()) as T;
  }

  async info(): Promise<Info> {
    const info = await this.call<ServerInfo>('GET', '/api/v1/info');
    return {
      ...info,
      search: info.search ?? NO_MODES,
      searches: info.search !== undefined,
      ingests: info.ingest !== undefined,
    };
  }

  /**
   * Checks the key and learns what the server allows. A server without `GET /api/v1/info` (a
   * single service that does not mount it) is asked for a listing instead, and the console then
   * offers no pipeline toggles.
   */
  async signIn(): Promise<Info> {
    try {
      return await this.info();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
    // Any bearer-protected route tells a good key from a wrong one; /metrics is on every service.
    for (const path of ['/api/v1/collections', '/api/v1/jobs?limit=1', '/metrics']) {
      const res = await fetch(`${this.base}${path}`, {
        headers: { authorization: `Bearer ${this.key}` },
        credentials: 'omit',
      });
      if (res.ok) return WITHOUT_INFO;
      if (res.status !== 404) throw await failure(res);
    }
    throw new ApiError(404, 'NOT_FOUND', 'This server offers none of the APIs the console uses');
  }

  collections() {
    return this.call<{ collections: Collection[] }>('GET', '/api/v1/collections');
  }

  documents(collection: string, cursor?: string | null) {
    const q = new URLSearchParams({ limit: '50' });
    if (cursor) q.set('cursor', cursor);
    return this.call<{ documents: DocumentRow[]; next_cursor: string | null }>(
      'GET',
      `/api/v1/collections/${encodeURIComponent(collection)}/documents?${q}`,
    );
  }

  versions(fileId: string, collection: string) {
    const q = new URLSearchParams({ collection_name: collection });
    return this.call<{
      file_id: string;
      collection_name: string;
      keep_versions?: number;
      versions: Version[];
    }>('GET', `/api/v1/documents/${encodeURIComponent(fileId)}/versions?${q}`);
  }

  restore(fileId: string, version: string, collection: string) {
    return this.call<{ status: true; version: string; chunks_count: number }>(
      'POST',
      `/api/v1/documents/${encodeURIComponent(fileId)}/versions/${encodeURIComponent(version)}/restore`,
      { collection_name: collection },
    );
  }

  chunks(fileId: string, offset?: string) {
    const q = new URLSearchParams({ limit: '200', include_content: 'full' });
    if (offset) q.set('offset', offset);
    return this.call<ChunkPage>('GET', `/api/v1/documents/${encodeURIComponent(fileId)}/chunks?${q}`);
  }

  /** Deletes a document of a collection, every version of it. */
  deleteDocument(collection: string, fileId: string) {
    return this.call<{ status: true; chunks_deleted: number }>(
      'DELETE',
      `/api/v1/collections/${encodeURIComponent(collection)}/documents/${encodeURIComponent(fileId)}`,
    );
  }

  /** Deletes a collection: every document in it. */
  deleteCollection(collection: string) {
    return this.call<{ status: true; documents_deleted: number; chunks_deleted: number }>(
      'DELETE',
      `/api/v1/collections/${encodeURIComponent(collection)}`,
    );
  }

  /**
   * Submits a file named by its path (no file_id): the server derives the file_id from the
   * collection and the path, and reuses the document it names (docs/api.md, "One identity for a
   * file"), so an upload of a file already ingested, by the CLI too, is a new version of it.
   */
  submitJob(file: File, path: string, collection: string) {
    const form = new FormData();
    form.set('path', path);
    form.set('collection_name', collection);
    form.set('user_id', 'console');
    form.set('file', file, file.name);
    return this.call<Job>('POST', '/api/v1/jobs', form);
  }

  search(request: SearchRequest) {
    return this.call<SearchResponse>('POST', '/search', request);
  }

  /**
   * Follows a job's events (`text/event-stream`, read with fetch so the key travels in the
   * Authorization header, never in the URL) until a terminal state or `signal` aborts.
   */
  async watchJob(jobId: string, onJob: (job: Job) => void, signal: AbortSignal): Promise<void> {
    const res = await fetch(`${this.base}/api/v1/jobs/${encodeURIComponent(jobId)}/events`, {
      headers: { authorization: `Bearer ${this.key}`, accept: 'text/event-stream' },
      credentials: 'omit',
      signal,
    });
    if (!res.ok || !res.body) throw await failure(res);
    const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    const reader = events.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        if (value.event !== 'job') continue;
        const job = JSON.parse(value.data) as Job;
        onJob(job);
        if (TERMINAL.includes(job.state)) return;
      }
    } finally {
      reader.releaseLock();
    }
  }
}

/** The path a dropped file is named by: its path within the drop (folder included), else its name. */
export function pathOf(file: File): string {
  const rel = (file as File & { webkitRelativePath?: string }).webkitRelativePath;
  return rel && rel.length > 0 ? rel : file.name;
}
