import { createHash } from 'node:crypto';
import type { ReservedTenant } from './reserved.js';

/**
 * The shared index contract: everything ingestion and retrieval must agree on lives here
 * (docs/architecture.md, "The shared index contract" and "Stored point"). Both services import this module.
 */
export const DEFAULT_COLLECTION = 'ingestion_files';
export const DENSE_VECTOR = 'text-dense';
export const SPARSE_VECTOR = 'text-sparse';

/** Payload fields with a keyword index (Qdrant) or a real column (LanceDB). */
export const INDEXED_META_FIELDS = [
  'collection_name',
  'collection_type',
  'languages',
  'file_id',
  'ingest_version',
] as const;

/** `meta` of a stored point, in the Haystack layout the reference deployment writes. */
export interface ChunkMeta {
  collection_name: string;
  collection_type: string;
  file_id: string;
  ingest_version: string;
  split_id: number;
  name?: string;
  source?: string;
  user_id?: string;
  /** Heading breadcrumb, outermost first (markdown split mode). */
  headers?: string[];
  /**
   * First page the chunk lies on, 0-based: Open WebUI's convention (its loaders write it so, and its
   * citation view links `#page=${page + 1}`). The only 0-based page field.
   */
  page?: number;
  /** The same page as people number it (1-based, as a PDF viewer's page index shows it). */
  page_number?: number;
  /** Every page the chunk touches, 1-based like `page_number`. */
  pages?: number[];
  /** Character offsets of the chunk in the extracted text of its document. */
  char_start?: number;
  char_end?: number;
  title?: string;
  subject?: string;
  authors?: string[];
  created_at?: string;
  /** ISO 639-1 codes. */
  languages?: string[];
  extractor?: string;
  /** `null` on a chunk `auto` routed to an engine without vision profiles. */
  vision_profile?: string | null;
  [extra: string]: unknown;
}

export interface SparseVector {
  indices: number[];
  values: number[];
}

/** One chunk as written: `{ content, meta }` plus its named vectors. */
export interface IndexPoint {
  id: string;
  content: string;
  meta: ChunkMeta;
  /** `text-dense`; absent in lexical-only mode. */
  dense?: number[];
  /** `text-sparse`; present when sparse embedding is on. */
  sparse?: SparseVector;
  /**
   * The analysed terms of the chunk's lexical side (contextual header and text, stemmed in its
   * document's language), joined by spaces: what LanceDB's full-text index stores. Qdrant ignores it.
   */
  lexical?: string;
}

export interface StoredPoint {
  id: string;
  content: string;
  meta: ChunkMeta;
}

export interface SearchHit extends StoredPoint {
  /**
   * Higher is more relevant. Dense: (cos + 1) / 2 in [0, 1]; hybrid: RRF divided by its maximum, in
   * [0, 1]; lexical: the engine's BM25 score (unbounded; retrieval maps it into [0, 1]).
   */
  score: number;
}

/** Typed filters; every given condition must hold (AND). */
export interface IndexFilter {
  /** `meta.collection_name` in this set (tenancy). An empty set matches nothing. */
  collectionNames?: readonly string[];
  fileId?: string;
  /** `meta.ingest_version` equals this. */
  ingestVersion?: string;
  /** `meta.ingest_version` differs from this, or is missing. */
  notIngestVersion?: string;
  /** `meta.split_id` equals this (split 0: one point per version of a file, for listings). */
  splitId?: number;
  /** `meta.languages` contains any of these. An empty set matches nothing. */
  languages?: readonly string[];
  /** `meta.file_id` in this set. An empty set matches nothing. */
  fileIds?: readonly string[];
  /** `meta.collection_type` in this set. An empty set matches nothing. */
  collectionTypes?: readonly string[];
  /** `meta.source` starts with this (case-sensitive, compared as written). */
  sourcePrefix?: string;
  /**
   * `meta.created_at` (the document's creation date, stored as `Date.toISOString()` writes it)
   * strictly after / before this instant, given in that same form (`toFilterInstant`). A chunk
   * without `created_at` matches neither.
   */
  createdAfter?: string;
  createdBefore?: string;
  /**
   * Kilde's bookkeeping tenant instead of `collectionNames` (src/index/reserved.ts). Reserved
   * tenants are reachable only this way: adapters drop their values from `collectionNames`.
   */
  reserved?: ReservedTenant;
  /** Leave out the reserved tenants (a read by file_id that should see chunks only). */
  chunksOnly?: boolean;
}

/** The one form `createdAfter`/`createdBefore` take: `Date.toISOString()`, as ingestion stores `created_at`. */
const FILTER_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An instant in the form filters compare (`Date.toISOString()`), or undefined when it is not a date. */
export function toFilterInstant(value: string): string | undefined {
  const t = Date.parse(value);
  if (Number.isNaN(t)) return undefined;
  const iso = new Date(t).toISOString();
  // Years outside 0000–9999 are written with a sign and six digits; they do not compare as text.
  return FILTER_INSTANT.test(iso) ? iso : undefined;
}

/** Throws unless `value` is a filter instant (adapters check before a value reaches a query). */
export function checkFilterInstant(value: string): string {
  if (!FILTER_INSTANT.test(value)) throw new Error(`not a filter instant: ${JSON.stringify(value)}`);
  return value;
}

const NAMESPACE = 'kilde/point/v1';

/**
 * Deterministic point id (a UUID in RFC 4122 layout, SHA-1 name-based) from file_id, ingest_version
 * and split_id, so a retried write of the same chunk overwrites instead of duplicating.
 */
export function pointId(fileId: string, ingestVersion: string, splitId: number): string {
  const h = createHash('sha1')
    .update(`${NAMESPACE}\u0000${fileId}\u0000${ingestVersion}\u0000${splitId}`)
    .digest();
  h[6] = (h[6]! & 0x0f) | 0x50;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * `meta` as read back from the index, page fields in today's layout whoever wrote them:
 * - Kilde before 0.1 wrote `page` 1-based with `pages` and no `page_number`: `page_number` takes
 *   that value and `page` becomes 0-based, so old indexes cite the right page without re-ingesting;
 * - writers with only a 1-based `page_number` (Haystack's splitter) get the 0-based `page` too.
 */
export function withPageFields(meta: ChunkMeta): ChunkMeta {
  const { page, page_number: number, pages } = meta;
  if (Number.isInteger(number)) {
    return page === undefined ? { ...meta, page: (number as number) - 1 } : meta;
  }
  if (Number.isInteger(page) && Array.isArray(pages) && pages[0] === page) {
    return { ...meta, page: (page as number) - 1, page_number: page as number };
  }
  return meta;
}

/** Dense scores are normalised cosine: (cos + 1) / 2, clamped to [0, 1]. */
export function normaliseCosine(cos: number): number {
  return Math.min(1, Math.max(0, (cos + 1) / 2));
}
