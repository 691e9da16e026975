import type { EvalRun, RunSummary } from '../eval/run.js';
import type { ChunkMeta } from '../index/contract.js';
import { CliError } from './fail.js';
import type { JobClient } from './job-client.js';

/** `POST /search` response, the chat platform's shape. */
export interface SearchResult {
  documents: string[][];
  metadatas: ChunkMeta[][];
  distances: number[][];
}

export interface SearchArgs {
  queries: string[];
  collection_names: string[];
  k: number;
}

export interface IngestArgs {
  path: string;
  fileId: string;
  filename: string;
  collection: string;
  userId: string;
  /** `meta.source`: the document's path (over HTTP sent as `path` when named by it). */
  source: string;
  /**
   * Named by its path (docs/api.md, "One identity for a file"): the name Kilde 0.x gave the file,
   * whose id is reused when the index holds a document under it. With it, an upload sends `path`
   * and no `file_id`, and the server resolves the id; `fileId` is then only what it derives first.
   */
  legacy?: string;
}

export interface IngestedFile {
  chunks: number;
  /** The file_id the document got (named by path: possibly a reused older one). */
  fileId?: string;
  engine?: string;
}

export interface ExtractResult {
  engine: string;
  documents: unknown[];
}

/** The body of `POST /api/v1/eval`. */
export interface EvalRequest {
  collection_names: string[];
  queries: { id: string; text: string }[];
  qrels: Record<string, Record<string, number>>;
  k: number;
  name?: string;
}

export interface DocumentSummary {
  file_id: string;
  name: string | null;
  source: string | null;
  chunks: number;
  ingest_version: string | null;
}

/**
 * What the CLI does, whether on the embedded index in this process (local) or against a running
 * server (`--url`). JSON answers keep the HTTP routes' shapes in both modes.
 */
export interface Backend {
  readonly mode: 'local' | 'http';
  /** Opens what the commands need (local: config, index, pipeline) so start-up errors surface once. */
  prepare(): Promise<void>;
  ingest(args: IngestArgs): Promise<IngestedFile>;
  /**
   * Many files in one pipeline pass and one group commit (local mode only); each file settles on
   * its own, as `ingest` would.
   */
  ingestMany?(args: readonly IngestArgs[]): Promise<PromiseSettledResult<IngestedFile>[]>;
  /**
   * Before `prepare` (local mode only): starts the pipeline's worker pool and has it read the files
   * of these passes while the index opens (resolves once they are sent; a failure to start is the
   * pipeline's to report). Each pass takes its files' results, each checked unchanged since it was
   * read; what it does not take is dropped when it ends.
   */
  headStart?(passes: ReadonlyArray<readonly IngestArgs[]>): Promise<void>;
  /**
   * After a run of ingests (local mode only): finishes the index's upkeep that would otherwise die
   * with this process (docs/operations.md, "The embedded index"); whether there was work to do.
   */
  settle?(): Promise<boolean>;
  search(args: SearchArgs): Promise<SearchResult>;
  extract(path: string, engine: string | undefined): Promise<ExtractResult>;
  deleteDocument(fileId: string): Promise<Record<string, unknown>>;
  chunks(fileId: string, query: Record<string, string>): Promise<Record<string, unknown>>;
  listDocuments(collection: string): Promise<DocumentSummary[]>;
  /** `GET /api/v1/documents/{file_id}/versions`. */
  versions(fileId: string, collection: string | undefined): Promise<Record<string, unknown>>;
  /** `POST /api/v1/documents/{file_id}/versions/{version}/restore`. */
  restore(fileId: string, version: string, collection: string | undefined): Promise<Record<string, unknown>>;
  /** `POST /api/v1/eval`: labelled queries through the search path, scored (and stored). */
  evaluate(body: EvalRequest): Promise<EvalRun>;
  /** Stored evaluation runs (`GET /api/v1/eval/runs`). */
  listRuns(): Promise<RunSummary[]>;
  /** One stored run (`GET /api/v1/eval/runs/{id}`). */
  getRun(id: string): Promise<EvalRun>;
  /** Of these collection names, the ones that hold no chunk (a server cannot tell: none). */
  missingCollections(names: readonly string[]): Promise<string[]>;
  /** Where the index is, for messages (local: its directory or URI). */
  readonly where?: string;
  /** The server's jobs API (`--url`): `kilde ingest` submits jobs and follows their events. */
  readonly jobs?: JobClient;
  /** The server's base URL (`--url`). */
  readonly url?: string;
  close(): Promise<void>;
}

/** An error answer of either body format: `{detail, code}` or ingestion's `{status:false, error, code}`. */
export function errorFromBody(status: number, body: unknown, what: string): CliError {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const message = typeof b.error === 'string' ? b.error : typeof b.detail === 'string' ? b.detail : undefined;
  const code = typeof b.code === 'string' ? b.code : undefined;
  // The cause behind a 5xx's public message, where the app gives it (the in-process app of a local
  // command always does: this is the operator's own machine); its first line only, never a stack.
  const cause = typeof b.debug === 'string' ? b.debug.split('\n')[0]?.trim() : undefined;
  const shown = [message ?? `HTTP ${status}`, cause && !message?.includes(cause) ? cause : undefined]
    .filter(Boolean)
    .join(': ');
  return new CliError(`${what}: ${shown}`, 1, code);
}

/** Groups a collection's chunks by file (the index has no document table). */
export function summarise(points: Iterable<{ meta: ChunkMeta }>): DocumentSummary[] {
  const byFile = new Map<string, DocumentSummary>();
  for (const { meta } of points) {
    const known = byFile.get(meta.file_id);
    if (known) {
      known.chunks += 1;
      continue;
    }
    byFile.set(meta.file_id, {
      file_id: meta.file_id,
      name: meta.name ?? null,
      source: meta.source ?? null,
      chunks: 1,
      ingest_version: meta.ingest_version ?? null,
    });
  }
  return [...byFile.values()].sort((a, b) => (a.source ?? a.file_id).localeCompare(b.source ?? b.file_id));
}
