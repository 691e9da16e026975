import type { Logger } from 'pino';
import type { SourceFile } from '../extract/extractor.js';
import { readerLibrary } from '../extract/file-type.js';
import { annotate, inBatchSpan, inSpan, withOrigin } from '../telemetry/tracing.js';
import type { SweepReport } from '../versions/sweep.js';
import {
  type DocumentWrites,
  deleteCollection,
  deleteDocument,
  deleteFile,
  prepareVersion,
  restore,
  sweep,
} from './document-writes.js';
import {
  type ChunkPage,
  type CollectionSummary,
  chunkPage,
  type DocumentSummary,
  documentsPage,
  fileVersions,
  listCollections,
  reading,
  type VersionSummary,
} from './knowledge.js';
import { type FileLock, InProcessFileLock, type Lease } from './lock.js';
import { DEFAULT_PASS_FILES, PASS_BYTES, PassQueue } from './pass-queue.js';
import {
  type IngestResult,
  type PassFile,
  type PipelineOptions,
  type PipelineParts,
  runPass,
  runPipeline,
} from './pipeline.js';
import { checkCollection, type IngestTarget } from './request.js';
import { Slots } from './slots.js';
import { cancelledIf } from './stages.js';

/** Produces the local file to ingest; it runs under the lock, after the `overwrite` check. */
export type SourceLoader = () => Promise<SourceFile & { bytes: number }>;

export interface IngestOutcome extends IngestResult {
  bytes: number;
}

export type { ChunkPage };

/** One file of `IngestService.ingestMany`. */
export interface BatchRequest {
  target: IngestTarget;
  load: SourceLoader;
}

/**
 * The ingestion service behind `PUT /api/v1/ingest`, `DELETE /api/v1/documents/{file_id}`, the
 * inspection route and the CLI's `kilde ingest`: one pipeline, one lock, one versioning rule.
 */
export class IngestService {
  readonly #lock: FileLock;
  /** Versions this process is writing now: the version sweep leaves them alone. */
  readonly #writing = new Set<string>();
  /** `ingest` calls past their lock and running now. */
  #running = 0;
  /** Files over a pass's 1 MiB run here, `INGEST_LARGE_FILES` at a time. */
  readonly #large: Slots;
  /**
   * Concurrent requests' small files, coalesced into pipeline passes (`runPass`), one pass
   * at a time beside the files running alone: under load they share pool tasks, embedding calls and
   * commits (docs/performance.md, "Over HTTP: concurrent uploads share passes"; two passes in flight cost the
   * server 30 % more CPU for no shorter run).
   */
  readonly #passes = new PassQueue(
    // A pass serves many requests: its spans form a trace of their own, linked to each file's.
    (files) =>
      inBatchSpan('kilde.ingest.pass', files, { 'kilde.pass.files': files.length }, () =>
        runPass(this.parts, files),
      ),
    {
      inFlight: 1,
      maxFiles: DEFAULT_PASS_FILES,
      maxBytes: PASS_BYTES,
    },
  );

  /** `lock`: the Redis lease shared by replicas (`REDIS_URL`); the in-process lock by default. */
  constructor(
    private readonly parts: PipelineParts,
    lock?: FileLock,
  ) {
    this.#lock = lock ?? new InProcessFileLock();
    this.#large = new Slots(parts.largeFiles ?? 2);
  }

  /** Releases the lock's connection (Redis); the service takes no requests afterwards. */
  close(): Promise<void> {
    return this.#lock.close();
  }

  get log(): Logger {
    return this.parts.log;
  }

  /**
   * Ingests one file as a new version of `target.fileId`. Requests for the same file_id wait for each
   * other; `overwrite=false` is checked under the lock so two such requests cannot both pass. An
   * aborted `signal` (the client went away) ends the run before its version becomes visible.
   */
  ingest(
    target: IngestTarget,
    load: SourceLoader,
    signal?: AbortSignal,
    options: PipelineOptions = {},
  ): Promise<IngestOutcome> {
    // One span per file (its stages are children); never the file's text (src/telemetry/tracing.ts).
    const attributes = { 'kilde.file_id': target.fileId, 'kilde.collection': target.collectionName };
    return inSpan('kilde.ingest.file', attributes, async (span) => {
      const outcome = await this.#ingest(target, load, signal, options);
      annotate(span, {
        'kilde.ingest.version': outcome.ingestVersion,
        'kilde.chunks.count': outcome.chunksCount,
        'kilde.extraction.engine': outcome.extraction.engine,
        'kilde.file.bytes': outcome.bytes,
      });
      return outcome;
    });
  }

  async #ingest(
    target: IngestTarget,
    load: SourceLoader,
    signal: AbortSignal | undefined,
    options: PipelineOptions,
  ): Promise<IngestOutcome> {
    checkCollection(target);
    return this.#lock.run(target.fileId, async (lease) => {
      cancelledIf(signal);
      const { file, version } = await this.#prepare(target, load, lease);
      const started = performance.now();
      this.#writing.add(version);
      // With other ingests in flight a small plain-text file joins the next shared pass (PassQueue);
      // alone, larger than a pass, or a document with a reader of its own (PDF, DOCX, HTML, office:
      // seconds for some, which would hold up a whole pass) it runs its own pipeline.
      const together = this.#running > 0 && file.bytes <= PASS_BYTES && readerLibrary(file.filename) === '';
      this.#running += 1;
      let result: IngestResult;
      let batch: number | undefined;
      try {
        if (together) {
          const { outcome, files } = await this.#passes.add(
            withOrigin({
              target,
              file,
              version,
              lease,
              bytes: file.bytes,
              ...(signal ? { signal } : {}),
              ...(options.onProgress ? { onProgress: options.onProgress } : {}),
            }),
          );
          if (!outcome.ok) throw outcome.error;
          result = outcome.result;
          batch = files;
        } else if (file.bytes > PASS_BYTES) {
          // A large file waits for one of the INGEST_LARGE_FILES slots: their memory stays bounded.
          result = await this.#large.run(signal, () =>
            runPipeline(this.parts, target, file, version, signal, lease, options),
          );
        } else result = await runPipeline(this.parts, target, file, version, signal, lease, options);
      } catch (err) {
        if (signal?.aborted) {
          this.parts.log.info(
            { fileId: target.fileId, collection: target.collectionName, version },
            'ingest cancelled: the client closed the request before the version was committed',
          );
          cancelledIf(signal);
        }
        throw err;
      } finally {
        this.#writing.delete(version);
        this.#running -= 1;
      }
      this.parts.log.info(
        {
          fileId: target.fileId,
          collection: target.collectionName,
          chunks: result.chunksCount,
          version,
          engine: result.extraction.engine,
          bytes: file.bytes,
          ms: Math.round(performance.now() - started),
          ...(batch === undefined ? {} : { batch }),
        },
        'ingested',
      );
      return { ...result, bytes: file.bytes };
    });
  }

  /** The overwrite check and the new version's name, under the lock (document-writes.ts). */
  #prepare(target: IngestTarget, load: SourceLoader, lease: Lease) {
    return prepareVersion(this.parts, target, load, lease);
  }

  /**
   * Ingests many files in one pipeline pass (`runPass`): each becomes a new version of its
   * `file_id` exactly as `ingest` would make it, and each settles on its own (one file's failure
   * leaves its previous version and fails nothing else). The pass holds every file's lock, taken in
   * `file_id` order (so two passes cannot wait for each other); a `file_id` named twice is ingested
   * again after the pass, as a second `ingest` would be.
   */
  async ingestMany(
    requests: readonly BatchRequest[],
    signal?: AbortSignal,
  ): Promise<PromiseSettledResult<IngestOutcome>[]> {
    const results: PromiseSettledResult<IngestOutcome>[] = requests.map(() => ({
      status: 'rejected',
      reason: new Error('not ingested'),
    }));
    const first = new Map<string, number>();
    const again: number[] = [];
    requests.forEach((r, i) => {
      try {
        checkCollection(r.target);
      } catch (err) {
        results[i] = { status: 'rejected', reason: err };
        return;
      }
      if (first.has(r.target.fileId)) again.push(i);
      else first.set(r.target.fileId, i);
    });
    const order = [...first.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, i]) => i);
    if (order.length > 0) {
      const leases = new Map<number, Lease>();
      const locked = async (k: number): Promise<void> => {
        if (k < order.length) {
          const i = order[k]!;
          return this.#lock.run(requests[i]!.target.fileId, async (lease) => {
            leases.set(i, lease);
            await locked(k + 1);
          });
        }
        await this.#pass(requests, order, leases, results, signal);
      };
      await locked(0);
    }
    for (const i of again) {
      const r = requests[i]!;
      results[i] = await this.ingest(r.target, r.load, signal).then(
        (value) => ({ status: 'fulfilled' as const, value }),
        (reason: unknown) => ({ status: 'rejected' as const, reason }),
      );
    }
    return results;
  }

  /** The body of `ingestMany` under every file's lock. */
  async #pass(
    requests: readonly BatchRequest[],
    order: readonly number[],
    leases: ReadonlyMap<number, Lease>,
    results: PromiseSettledResult<IngestOutcome>[],
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { log } = this.parts;
    const files: Array<PassFile & { at: number; bytes: number }> = [];
    await Promise.all(
      order.map(async (i) => {
        const { target, load } = requests[i]!;
        const lease = leases.get(i)!;
        try {
          cancelledIf(signal);
          const { file, version } = await this.#prepare(target, load, lease);
          files.push({ at: i, target, file, version, lease, bytes: file.bytes });
        } catch (err) {
          results[i] = { status: 'rejected', reason: err };
        }
      }),
    );
    files.sort((a, b) => a.at - b.at);
    const started = performance.now();
    for (const f of files) this.#writing.add(f.version);
    try {
      const outcomes = await runPass(this.parts, files, signal);
      const ms = Math.round(performance.now() - started);
      outcomes.forEach((o, k) => {
        const f = files[k]!;
        if (!o.ok) {
          results[f.at] = { status: 'rejected', reason: o.error };
          return;
        }
        log.info(
          {
            fileId: f.target.fileId,
            collection: f.target.collectionName,
            chunks: o.result.chunksCount,
            version: f.version,
            engine: o.result.extraction.engine,
            bytes: f.bytes,
            ms,
            batch: files.length,
          },
          'ingested',
        );
        results[f.at] = { status: 'fulfilled', value: { ...o.result, bytes: f.bytes } };
      });
    } finally {
      for (const f of files) this.#writing.delete(f.version);
    }
  }

  /** Settles the versions a crash interrupted (document-writes.ts, `sweep`). */
  sweepVersions(graceMs: number): Promise<SweepReport> {
    return sweep(this.#writes, graceMs);
  }

  /** The `KEEP_VERSIONS` the index records, when this process does not set it (index-settings.ts). */
  useKeepVersions(keep: number): void {
    this.parts.keepVersions = keep;
  }

  /** `KEEP_VERSIONS`. */
  get keepVersions(): number {
    return this.parts.keepVersions ?? 0;
  }

  /** The collections the caller may read, with their files, chunks and last ingest. */
  collections(allowed?: ReadonlySet<string>): Promise<CollectionSummary[]> {
    return reading(() => listCollections(this.parts.index, allowed));
  }

  /** One page of a collection's documents. */
  documents(
    collectionName: string,
    limit: number,
    cursor: string | undefined,
  ): Promise<{ documents: DocumentSummary[]; next: string | undefined }> {
    return documentsPage(this.parts.index, collectionName, limit, cursor);
  }

  /**
   * The versions of a file in a collection (the collection its live chunks are in when not given).
   * 404 when the file has none there.
   */
  versions(
    fileId: string,
    collectionName?: string,
    within?: ReadonlySet<string>,
  ): Promise<{ collectionName: string; versions: VersionSummary[] }> {
    return fileVersions(this.parts.index, fileId, collectionName, within);
  }

  /** What the knowledge API's writes need (document-writes.ts). */
  get #writes(): DocumentWrites {
    const { index, log } = this.parts;
    const now = this.parts.now ?? Date.now;
    return { index, log, lock: this.#lock, now, keep: this.keepVersions, writing: this.#writing };
  }

  /**
   * Makes a kept version live again, under the file's lock like an ingest (document-writes.ts,
   * `restore`). With `within` (a per-tenant key's collections), a file or collection outside them
   * is missing: the same 404.
   */
  restore(
    fileId: string,
    version: string,
    collectionName?: string,
    within?: ReadonlySet<string>,
  ): Promise<{ collectionName: string; chunksCount: number }> {
    return restore(this.#writes, fileId, version, collectionName, within);
  }

  /** Deletes every point of the file: every version, every collection. Waits for a running ingest. */
  deleteFile(fileId: string): Promise<number> {
    return deleteFile(this.#writes, fileId);
  }

  /**
   * Deletes a document of one collection (`DELETE /api/v1/collections/{name}/documents/{file_id}`);
   * 404 when it has none there (document-writes.ts).
   */
  deleteDocument(fileId: string, collectionName: string): Promise<number> {
    return deleteDocument(this.#writes, fileId, collectionName);
  }

  /** Deletes every document of a collection (`DELETE /api/v1/collections/{name}`); 404 when it has no chunks. */
  deleteCollection(collectionName: string): Promise<{ documents: number; chunks: number }> {
    return deleteCollection(this.#writes, collectionName);
  }

  /** One page of a file's stored chunks (read-only inspection). */
  chunks(fileId: string, limit: number, cursor: string | undefined): Promise<ChunkPage> {
    return chunkPage(this.parts.index, fileId, limit, cursor);
  }
}
