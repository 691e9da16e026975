import { basename } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { optionalString } from '../config/fields.js';
import { embeddingRules } from '../config/index-settings.js';
import { type Env, parseConfig } from '../config/parse.js';
import { allSchema } from '../embedded/all-config.js';
import { generateKey } from '../embedded/api-key.js';
import {
  composeServices,
  type EmbeddedService,
  resolveEmbedded,
  type SomeParts,
} from '../embedded/compose.js';
import { KildeError } from '../errors.js';
import { evalRunSchema, type RunSummary } from '../eval/run.js';
import type { KildeApp } from '../http/app.js';
import { closeParts, startParts } from '../http/part-lifecycle.js';
import type { StoredPoint } from '../index/contract.js';
import { type IndexConfigFields, resolveIndexUri } from '../index/settings-from-config.js';
import type { StartedPipeline } from '../ingest/build.js';
import {
  type Backend,
  errorFromBody,
  type IngestArgs,
  type IngestedFile,
  type SearchResult,
  summarise,
} from './backend.js';
import { debugOn } from './fail.js';

/** `kilde serve all`'s schema, except that the local CLI needs no inbound key. */
export function localSchema() {
  return z
    .object({
      ...allSchema.shape,
      API_KEY: optionalString('Not needed by the local CLI, which serves no one.'),
    })
    .superRefine(embeddingRules);
}

interface Runtime {
  all: SomeParts;
  /** Built on the first JSON route a command calls: ingesting needs no app. */
  app?: Promise<KildeApp>;
  services: readonly EmbeddedService[];
}

/**
 * The CLI on the embedded index, in this process: the same parts as `kilde serve all` (same config,
 * same defaults, same index directory), driven without a socket. Ingestion calls the service
 * directly (no upload copy); the JSON routes are answered by the in-process app, so `--json` prints
 * exactly what the server would answer.
 */
export function createLocalBackend(env: Env, log: Logger, engine?: string): Backend {
  // A command parses its configuration and its few route bodies once: zod's interpreter does that
  // in 10–17 ms where compiling each schema first took 21–35 ms. Servers keep the compiled checks.
  z.config({ jitless: true });
  const parsed = parseConfig(localSchema(), { ...env, ...(engine ? { EXTRACTION_ENGINE: engine } : {}) });
  // The in-process app still checks a bearer on its routes; this key never leaves the process. It
  // never listens, so it needs no OpenAPI document either.
  // DEBUG: its error bodies carry the cause of a 5xx, which `errorFromBody` adds to the one line.
  const config = {
    ...parsed,
    API_KEY: generateKey(),
    ENABLE_INSPECTION_API: true,
    OPENAPI_ENABLED: false,
    DEBUG: true,
  };
  let runtime: Promise<Runtime> | undefined;
  // A failed request of the in-process app is this command's failure, which the CLI reports as one
  // line: the app's own error log of it (a JSON line with a stack) is kept for LOG_LEVEL_APP/DEBUG.
  const requestLog = env.LOG_LEVEL_APP?.trim() || debugOn(env) ? log : log.child({}, { level: 'silent' });

  /**
   * The parts a command needs, over the one index: `search` mounts retrieval, `documents list` only
   * opens the index, ingestion starts its pipeline only for the commands that ingest or delete. A
   * later call that needs more reopens with the union (one command rarely does).
   */
  let queue: Promise<unknown> = Promise.resolve();
  /** Ingestion's first worker, started with its pool (with PDFium when the first pass holds a PDF). */
  let startWorker: { preload: boolean } | undefined;
  /** Ingestion's pipeline up to its pool, started by `headStart`; the ingest part built first owns it. */
  let early: Promise<StartedPipeline> | undefined;
  let unclaimed: Promise<StartedPipeline> | undefined;
  const ingestDeps = (started = unclaimed) => {
    unclaimed = undefined;
    return { ...(startWorker ? { startWorker } : {}), ...(started ? { started } : {}) };
  };
  const reopen = async (need: readonly EmbeddedService[]): Promise<Runtime> => {
    const current = runtime ? await runtime.catch(() => undefined) : undefined;
    if (current && need.every((s) => current.services.includes(s))) return current;
    const services = [...new Set([...(current?.services ?? []), ...need])];
    if (current && !current.app) {
      // No app was built over the parts yet (`prepare` opened the index alone): the new services
      // join the index that is open, which is not opened a second time.
      const added = services.filter((s) => !current.services.includes(s));
      const joined = (async (): Promise<Runtime> => {
        let more: SomeParts | undefined;
        try {
          more = await composeServices(
            config,
            log,
            { jobs: false, index: current.all.index, ...(added.includes('ingest') ? ingestDeps() : {}) },
            added,
          );
          await startParts(more.parts);
        } catch (err) {
          // As a failed reopen leaves nothing open: the new parts, then the runtime they joined.
          if (more) await closeParts(more.parts, log);
          await closeRuntime(current);
          throw err;
        }
        const all = {
          ...current.all,
          parts: [...current.all.parts, ...more.parts],
          ingest: more.ingest ?? current.all.ingest,
        };
        return { all, services };
      })();
      runtime = joined;
      return joined;
    }
    if (current) await closeRuntime(current);
    runtime = (async () => {
      const all = await composeServices(
        config,
        log,
        { jobs: false, ...(services.includes('ingest') ? ingestDeps() : {}) },
        services,
      );
      try {
        await startParts(all.parts);
      } catch (err) {
        await closeParts(all.parts, log);
        throw err;
      }
      return { all, services };
    })();
    return runtime;
  };
  /** The HTTP app (fastify and every route) loads only for the commands that call a route. */
  const appOf = (rt: Runtime): Promise<KildeApp> =>
    (rt.app ??= import('../http/app.js').then(({ buildApp }) =>
      buildApp(config, { logger: requestLog, parts: rt.all.parts }),
    ));
  const closeRuntime = async (rt: Runtime) => {
    const app = rt.app ? await rt.app.catch(() => undefined) : undefined;
    // The app's close closes the parts; without an app they are closed here, in the same order.
    if (app) await app.close();
    else await closeParts(rt.all.parts, log);
  };
  // One open at a time: concurrent ingests share the runtime the first of them opened.
  const open = (need: readonly EmbeddedService[]): Promise<Runtime> => {
    const next = queue.then(() => reopen(need));
    queue = next.catch(() => undefined);
    return next;
  };
  const ingestion = async () => {
    const { all } = await open(['ingest']);
    if (!all.ingest) throw new Error('ingestion was not mounted');
    return all.ingest;
  };

  async function call(
    need: readonly EmbeddedService[],
    what: string,
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    payload?: unknown,
  ) {
    const app = await appOf(await open(need));
    const res = await app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${config.API_KEY}` },
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
    const body: unknown = res.body === '' ? undefined : res.json();
    if (res.statusCode >= 400) throw errorFromBody(res.statusCode, body, what);
    return body as Record<string, unknown>;
  }

  async function ingestMany(list: readonly IngestArgs[]): Promise<PromiseSettledResult<IngestedFile>[]> {
    const { stat } = await import('node:fs/promises');
    const max = Number((config as Record<string, unknown>).MAX_UPLOAD_BYTES);
    startWorker ??= { preload: list.some((a) => /\.pdf$/i.test(a.filename)) };
    const { index, service } = (await ingestion()).pipeline();
    const { legacyFileIdFor, resolveIdentities } = await import('../ingest/file-identity.js');
    // Named by path: the id of the document the path names, an older version's or a console's
    // upload of it included; one read per collection for the whole pass.
    const ids: { fileId: string; source: string }[] = list.map((a) => ({
      fileId: a.fileId,
      source: a.source,
    }));
    for (const collection of new Set(list.map((a) => a.collection))) {
      const named = list.flatMap((a, i) =>
        a.legacy !== undefined && a.collection === collection ? [i] : [],
      );
      if (named.length === 0) continue;
      const found = await resolveIdentities(
        index,
        collection,
        named.map((i) => {
          const a = list[i]!;
          const legacy = a.legacy ?? '';
          return {
            collection,
            path: a.source,
            legacy: [{ fileId: legacyFileIdFor(collection, legacy), sources: [legacy, a.filename] }],
            tails: true,
          };
        }),
      );
      named.forEach((i, k) => {
        ids[i] = found[k]!;
      });
    }
    const sizes = list.map((a) => stat(a.path).then((s) => s.size));
    // A file that vanished since the walk fails alone, in its load.
    for (const size of sizes) size.catch(() => undefined);
    const outcomes = await service.ingestMany(
      list.map((a, i) => ({
        target: {
          fileId: ids[i]!.fileId,
          filename: a.filename,
          collectionName: a.collection,
          collectionType: 'file',
          userId: a.userId,
          overwrite: true,
          source: ids[i]!.source,
        },
        load: async () => {
          const bytes = await sizes[i]!;
          // Held to MAX_UPLOAD_BYTES like an upload, before a byte is read: a huge file is one
          // clear failure, not a process out of memory.
          if (bytes > max) {
            throw new KildeError(
              'INVALID_REQUEST',
              `File is ${bytes} bytes, over MAX_UPLOAD_BYTES (${max} bytes); raise MAX_UPLOAD_BYTES to ingest it`,
              { variant: 'tooLarge' },
            );
          }
          return { path: a.path, filename: a.filename, bytes };
        },
      })),
    );
    // What was read ahead for this pass and not taken (a file that failed before its read) goes;
    // should the pass throw, closing the backend stops the pool that holds it.
    await (await early?.catch(() => undefined))?.headStart.drop(list.map((a) => a.path));
    return outcomes.map((o, i) =>
      o.status === 'fulfilled'
        ? {
            status: 'fulfilled',
            value: { chunks: o.value.chunksCount, engine: o.value.extraction.engine, fileId: ids[i]!.fileId },
          }
        : o,
    );
  }

  return {
    mode: 'local',
    async headStart(passes) {
      if (runtime || early) return;
      startWorker = { preload: passes.some((list) => list.some((a) => /\.pdf$/i.test(a.filename))) };
      early = (async () => {
        const { startIngestPipeline } = await import('../ingest/build.js');
        // As the ingest part will see it (compose.ts).
        const { config: resolved } = await resolveEmbedded(config);
        const started = await startIngestPipeline(resolved, { log });
        const limits = {
          maxBytes: resolved.MAX_UPLOAD_BYTES,
          streamBytes: resolved.INGEST_SEGMENT_CHARS,
        };
        // Sent before the index's import holds this thread.
        await Promise.all(
          passes.map((list) =>
            started.headStart.read(
              list.map((a) => ({ path: a.path, filename: a.filename })),
              limits,
            ),
          ),
        );
        return started;
      })();
      unclaimed = early;
      // Before the index opens: its imports would hold up the pool's. A failure is the pipeline's
      // to report, when the ingest part is built on it.
      await early.catch(() => undefined);
    },
    where: resolveIndexUri(config as unknown as IndexConfigFields),
    async missingCollections(names) {
      const { all } = await open([]);
      const missing: string[] = [];
      for (const name of names) {
        if ((await all.index.count({ collectionNames: [name] })) === 0) missing.push(name);
      }
      return missing;
    },
    async prepare() {
      // The index only: each command then mounts what it uses (ingest its pipeline, search retrieval).
      await open([]);
    },
    async ingest(a) {
      const [settled] = await ingestMany([a]);
      if (settled!.status === 'rejected') throw settled!.reason;
      return settled!.value;
    },
    ingestMany,
    async search(args) {
      return (await call(['retrieve'], 'search', 'POST', '/search', args)) as unknown as SearchResult;
    },
    async extract(path, chosen) {
      // No index needed: only the engine.
      const name = chosen ?? parsed.EXTRACTION_ENGINE;
      // Loaded here, not at the top: the engines' imports (PDF, Office, OCR) cost more than half a
      // second, which every `kilde` command (and every config error) would otherwise pay.
      const { createExtractor } = await import('../extract/create-extractor.js');
      const extractor = createExtractor(name, parsed, { log });
      try {
        return {
          engine: extractor.name,
          documents: await extractor.extract({ path, filename: basename(path) }),
        };
      } finally {
        await extractor.close?.();
      }
    },
    async evaluate(body) {
      return evalRunSchema.parse(await call(['retrieve'], 'eval', 'POST', '/api/v1/eval', body));
    },
    async listRuns() {
      const body = await call(['retrieve'], 'eval runs', 'GET', '/api/v1/eval/runs');
      return body.runs as RunSummary[];
    },
    async getRun(id) {
      return evalRunSchema.parse(
        await call(['retrieve'], 'eval run', 'GET', `/api/v1/eval/runs/${encodeURIComponent(id)}`),
      );
    },
    deleteDocument: (fileId) =>
      call(['ingest'], 'delete', 'DELETE', `/api/v1/documents/${encodeURIComponent(fileId)}`),
    chunks(fileId, query) {
      const qs = new URLSearchParams(query).toString();
      return call(
        ['ingest'],
        'chunks',
        'GET',
        `/api/v1/documents/${encodeURIComponent(fileId)}/chunks${qs ? `?${qs}` : ''}`,
      );
    },
    versions(fileId, collection) {
      const qs = collection === undefined ? '' : `?${new URLSearchParams({ collection_name: collection })}`;
      return call(
        ['ingest'],
        'versions',
        'GET',
        `/api/v1/documents/${encodeURIComponent(fileId)}/versions${qs}`,
      );
    },
    restore(fileId, version, collection) {
      return call(
        ['ingest'],
        'restore',
        'POST',
        `/api/v1/documents/${encodeURIComponent(fileId)}/versions/${encodeURIComponent(version)}/restore`,
        collection === undefined ? {} : { collection_name: collection },
      );
    },
    async listDocuments(collection) {
      const { all } = await open([]);
      const points: StoredPoint[] = [];
      let cursor: string | undefined;
      do {
        const page = await all.index.scroll(
          { collectionNames: [collection] },
          { limit: 1000, ...(cursor === undefined ? {} : { cursor }) },
        );
        points.push(...page.points);
        cursor = page.next;
      } while (cursor !== undefined);
      return summarise(points);
    },
    async settle() {
      if (!runtime) return false;
      const { all } = await runtime;
      return (await all.index.settle?.()) ?? false;
    },
    async close() {
      try {
        if (runtime) await closeRuntime(await runtime);
      } finally {
        // Closed with the pipeline built on it, else here (a start-up that failed before).
        await (await early?.catch(() => undefined))?.close();
      }
    },
  };
}
