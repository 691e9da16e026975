import { createHash } from 'node:crypto';
import { z } from 'zod';
import { KildeError } from '../errors.js';
import type { KildeApp, PartContext } from '../http/app.js';
import { BODY_LIMITS } from '../http/body-limits.js';
import { makeErrorHandler } from '../http/errors.js';
import { type LibreChatSettings, libreChatAuth, readableCollections } from '../http/librechat-auth.js';
import { noteOnRequestLine } from '../http/request-line.js';
import type { ChunkMeta, StoredPoint } from '../index/contract.js';
import { identifierRefinement } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import { SEARCH_LIMITS } from './routes.js';
import { asSearchError } from './search-error.js';
import type { SearchService } from './search-service.js';

/**
 * The reading half of LibreChat's RAG API (`danny-avila/rag_api`, docs/librechat.md): what
 * LibreChat's `file_search` tool and its context handlers call, answered from the same search
 * service as `POST /search`, over the same index the ingest half writes.
 *
 * - `POST /query {file_id, query, k = 4, entity_id?}` and `POST /query_multiple {file_ids, query,
 *   k = 4}` answer `[[document, distance], …]`, best first: LibreChat reads `document.page_content`,
 *   `document.metadata.source` (it takes the part after the last `/` as the file name, so it must be
 *   there) and `document.metadata.page`, and shows `1 - distance` as the relevance.
 * - `GET /documents/{id}/context` answers the whole file as one JSON string (`RAG_USE_FULL_CONTEXT`).
 * - `GET /documents?ids=…` and `GET /ids`, which LibreChat does not call, for completeness.
 *
 * Every read is confined to the caller's collections (librechat-auth.ts) inside the index query.
 */

/** rag_api's `k` when a request gives none. */
const DEFAULT_K = 4;
/** Chunks one context or one `GET /documents` reads at most. */
const MAX_FILE_CHUNKS = 10_000;
const PAGE = 1000;

const fileId = (name: string) => z.string().min(1).max(512).superRefine(identifierRefinement(name));
const entityId = z.string().max(256).nullish();
const query = z.string().transform((q) => q.slice(0, SEARCH_LIMITS.queryChars));
const k = z.number().int().min(1).default(DEFAULT_K);

export const queryBody = z.object({ file_id: fileId('file_id'), query, k, entity_id: entityId });
export const queryMultipleBody = z.object({
  file_ids: z.array(fileId('file_ids')).max(1000),
  query,
  k,
  // Not in rag_api's body: a Kilde extension, read with the same rule as `/query`'s.
  entity_id: entityId,
});

/** A LangChain `Document` as FastAPI serialises it (rag_api's answers). */
const document = z.object({
  id: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  page_content: z.string(),
  type: z.literal('Document'),
});
const scored = z.tuple([document, z.number()]);
const documentResponse = z.object({ page_content: z.string(), metadata: z.record(z.string(), z.unknown()) });
const detail = z.object({ detail: z.string(), code: z.string() });

export interface LibreChatReadDeps {
  service: SearchService;
  index: VectorIndex;
  settings: LibreChatSettings;
}

/** rag_api's metadata of a chunk: `file_id`, `user_id`, `digest`, `source`, `page` (0-based, as PyPDF's), and Kilde's own. */
export function libreChatMetadata(point: StoredPoint): Record<string, unknown> {
  const m: ChunkMeta = point.meta;
  const source = [m.source, m.name, m.file_id].find((v) => typeof v === 'string' && v !== '');
  const out: Record<string, unknown> = {
    file_id: m.file_id,
    user_id: m.user_id ?? null,
    digest: createHash('md5').update(point.content, 'utf8').digest('hex'),
    source: source ?? '',
  };
  if (typeof m.page === 'number') out.page = m.page;
  if (typeof m.page_number === 'number') out.page_number = m.page_number;
  if (Array.isArray(m.pages)) out.pages = m.pages;
  if (m.title) out.title = m.title;
  if (m.headers) out.headers = m.headers;
  if (m.languages) out.languages = m.languages;
  out.split_id = m.split_id;
  out.collection_name = m.collection_name;
  return out;
}

/**
 * rag_api answers pgvector's cosine distance (0 identical, smaller better). Kilde's dense score is
 * the normalised cosine (cos + 1) / 2, so the distance of a dense hit is exactly 1 - cos. A hit
 * ranked by another path (hybrid, lexical, a reranker) has a relevance in [0, 1] and no cosine; its
 * distance is 1 - relevance, so LibreChat, which shows `1 - distance`, shows Kilde's score.
 */
export function distanceOf(path: string | undefined, score: number): number {
  const d = path === 'dense' ? 2 * (1 - score) : 1 - score;
  return Math.max(0, d);
}

/** Every chunk of the files in the collections, in file and split order, one version per file. */
async function fileChunks(
  index: VectorIndex,
  ids: readonly string[],
  collections: readonly string[],
): Promise<Map<string, StoredPoint[]>> {
  const byFile = new Map<string, StoredPoint[]>();
  try {
    for (const id of ids) {
      const points: StoredPoint[] = [];
      let cursor: string | undefined;
      do {
        const page = await index.scroll(
          { fileId: id, collectionNames: collections },
          { limit: PAGE, ...(cursor === undefined ? {} : { cursor }) },
        );
        points.push(...page.points);
        cursor = page.next;
      } while (cursor !== undefined && points.length < MAX_FILE_CHUNKS);
      if (points.length === 0) continue;
      // While a re-ingest commits, two versions (or one file in two collections) can be visible at
      // once: the first one seen is answered whole, never a mix.
      const first = points[0]!.meta;
      const one = points.filter(
        (p) =>
          p.meta.ingest_version === first.ingest_version && p.meta.collection_name === first.collection_name,
      );
      one.sort((a, b) => a.meta.split_id - b.meta.split_id);
      byFile.set(id, one);
    }
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw new KildeError('VECTORDB_FAILED', 'Reading from the vector index failed', { cause: err });
  }
  return byFile;
}

/**
 * rag_api's `process_documents`: the file name on the first line, then the chunks in order with a
 * `# PAGE n` line where the page changes (n as people count pages), overlapping text given once.
 */
export function contextText(points: readonly StoredPoint[]): string {
  const first = points[0];
  if (!first) return '';
  const name =
    String(first.meta.source ?? first.meta.name ?? first.meta.file_id)
      .split('/')
      .pop() ?? '';
  let text = `${name}\n`;
  let lastPage: number | undefined;
  let prev: ChunkMeta | undefined;
  for (const p of points) {
    const m = p.meta;
    if (typeof m.page_number === 'number' && m.page_number !== lastPage) {
      text += `\n# PAGE ${m.page_number}\n\n`;
      lastPage = m.page_number;
    }
    text += withoutOverlap(prev, p);
    prev = m;
  }
  return text.trim();
}

/** A chunk's text less what the previous chunk already gave (chunks overlap by CHUNK_OVERLAP). */
function withoutOverlap(prev: ChunkMeta | undefined, p: StoredPoint): string {
  const { char_start: start, char_end: end } = p.meta;
  const prevStart = prev?.char_start;
  const prevEnd = prev?.char_end;
  if (
    typeof start === 'number' &&
    typeof end === 'number' &&
    typeof prevStart === 'number' &&
    typeof prevEnd === 'number' &&
    start >= prevStart &&
    start < prevEnd &&
    end - start === p.content.length
  )
    return p.content.slice(prevEnd - start);
  // Adjacent chunks join as they were; anything else (a gap, another document) on a line of its own.
  if (prev === undefined || (start !== undefined && start === prevEnd)) return p.content;
  return `\n${p.content}`;
}

export function registerLibreChatReadRoutes(app: KildeApp, ctx: PartContext, deps: LibreChatReadDeps): void {
  const { index, service, settings } = deps;
  const auth = libreChatAuth(settings);
  // FastAPI's error body is `{detail}`: the kernel's `{detail, code}` is read the same way.
  app.setErrorHandler(makeErrorHandler(ctx.config.DEBUG));

  async function search(
    text: string,
    ids: readonly string[],
    collections: string[],
    kWanted: number,
  ): Promise<Array<[z.output<typeof document>, number]>> {
    if (text.trim() === '') return [];
    const outcome = await service
      .search({
        queries: [text],
        collection_names: collections,
        k: Math.min(kWanted, SEARCH_LIMITS.k),
        filter: { fileIds: [...new Set(ids)] },
        // The path each hit took says whether its score is a cosine (distanceOf).
        explain: true,
      })
      .catch((err: unknown) => {
        throw asSearchError(err);
      });
    const contents = outcome.documents[0] ?? [];
    return contents.map((content, i) => {
      const meta = outcome.metadatas[0]?.[i] ?? ({} as ChunkMeta);
      const score = outcome.distances[0]?.[i] ?? 0;
      const path = outcome.explanations?.[0]?.[i]?.path;
      return [
        {
          id: null,
          metadata: libreChatMetadata({ id: '', content, meta }),
          page_content: content,
          type: 'Document',
        },
        distanceOf(path, score),
      ];
    });
  }

  app.post(
    '/query',
    {
      onRequest: auth,
      bodyLimit: BODY_LIMITS.search,
      schema: { body: queryBody, response: { 200: z.array(scored), 401: detail } },
    },
    async (request) => {
      const body = request.body;
      const collections = readableCollections(request, settings.prefix, body.entity_id);
      const hits = await search(body.query, [body.file_id], collections, body.k);
      noteOnRequestLine(request, { file_id: body.file_id, hits: hits.length });
      return hits;
    },
  );

  app.post(
    '/query_multiple',
    {
      onRequest: auth,
      bodyLimit: BODY_LIMITS.search,
      schema: { body: queryMultipleBody, response: { 200: z.array(scored), 404: detail } },
    },
    async (request) => {
      const body = request.body;
      const collections = readableCollections(request, settings.prefix, body.entity_id);
      const hits = await search(body.query, body.file_ids, collections, body.k);
      noteOnRequestLine(request, { files: body.file_ids.length, hits: hits.length });
      if (hits.length === 0) throw new KildeError('NOT_FOUND', 'No documents found for the given query');
      return hits;
    },
  );

  app.get(
    '/documents/:id/context',
    {
      onRequest: auth,
      schema: {
        params: z.object({ id: fileId('id') }),
        querystring: z.object({ entity_id: entityId }),
        response: { 200: z.string(), 404: detail },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const collections = readableCollections(request, settings.prefix, request.query.entity_id);
      const points = (await fileChunks(index, [id], collections)).get(id);
      if (!points) throw new KildeError('NOT_FOUND', 'The specified file_id was not found');
      noteOnRequestLine(request, { file_id: id, chunks: points.length });
      // A JSON string, as FastAPI answers a `str`: LibreChat puts `response.data` into the prompt.
      return reply.type('application/json; charset=utf-8').send(JSON.stringify(contextText(points)));
    },
  );

  app.get(
    '/documents',
    {
      onRequest: auth,
      schema: {
        querystring: z.object({
          ids: z.union([fileId('ids'), z.array(fileId('ids')).min(1).max(100)]),
          entity_id: entityId,
        }),
        response: { 200: z.array(documentResponse), 404: detail },
      },
    },
    async (request) => {
      const ids = [...new Set([request.query.ids].flat())];
      const collections = readableCollections(request, settings.prefix, request.query.entity_id);
      const found = await fileChunks(index, ids, collections);
      if (ids.some((id) => !found.has(id))) throw new KildeError('NOT_FOUND', 'One or more IDs not found');
      return ids.flatMap((id) =>
        (found.get(id) ?? []).map((p) => ({ page_content: p.content, metadata: libreChatMetadata(p) })),
      );
    },
  );

  app.get(
    '/ids',
    {
      onRequest: auth,
      schema: { querystring: z.object({ entity_id: entityId }), response: { 200: z.array(z.string()) } },
    },
    async (request) => {
      const collections = readableCollections(request, settings.prefix, request.query.entity_id);
      const ids = new Set<string>();
      try {
        let cursor: string | undefined;
        do {
          // Split 0: one point per file version.
          const page = await index.scroll(
            { collectionNames: collections, splitId: 0 },
            { limit: PAGE, ...(cursor === undefined ? {} : { cursor }) },
          );
          for (const p of page.points) ids.add(p.meta.file_id);
          cursor = page.next;
        } while (cursor !== undefined && ids.size < MAX_FILE_CHUNKS);
      } catch (err) {
        throw new KildeError('VECTORDB_FAILED', 'Reading from the vector index failed', { cause: err });
      }
      return [...ids];
    },
  );
}
