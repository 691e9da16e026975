import { createHash } from 'node:crypto';
import { KildeError } from '../errors.js';
import type { StoredPoint } from '../index/contract.js';
import type { VectorIndex } from '../index/store.js';
import { committedRecord, ledgerFields, retiredEntries } from '../versions/ledger.js';
import { invalid } from './request.js';

/**
 * Read-only views of what is indexed (docs/api.md): collections, the documents of one, the
 * versions of one file. Every read is bounded: a listing page reads one point per document it
 * returns (split 0) plus a count and the ledger record of each; a version listing reads the chunks
 * of one file's versions (at most `KEEP_VERSIONS` + 1 of them).
 */

/** The most collections one listing returns (they are few: tenants, not files). */
export const MAX_COLLECTIONS = 1000;

export interface CollectionSummary {
  name: string;
  files: number;
  chunks: number;
  lastIngest: number | null;
}

export interface DocumentSummary {
  fileId: string;
  name: string | null;
  chunks: number;
  liveVersion: string | null;
  languages: string[];
  engine: string | null;
  writtenAt: number | null;
}

export interface VersionSummary {
  version: string;
  writtenAt: number | null;
  chunks: number;
  engine: string | null;
  source: string | null;
  contentHash: string;
  live: boolean;
}

/**
 * Every public collection (or those in `allowed`), with its files (one split-0 point per file),
 * chunks (the engine's count per tenant) and the time of its last committed ingest. The last is one
 * pass over the `committed` ledger (one small entry per file and collection).
 */
export async function listCollections(
  index: VectorIndex,
  allowed?: ReadonlySet<string>,
): Promise<CollectionSummary[]> {
  const tenants = (await index.tenants(MAX_COLLECTIONS)).filter((t) => !allowed || allowed.has(t.name));
  if (tenants.length === 0) return [];
  const last = await lastIngests(index, new Set(tenants.map((t) => t.name)));
  const out: CollectionSummary[] = [];
  for (const t of tenants) {
    const files = await index.count({ collectionNames: [t.name], splitId: 0 });
    out.push({ name: t.name, files, chunks: t.chunks, lastIngest: last.get(t.name) ?? null });
  }
  return out;
}

async function lastIngests(index: VectorIndex, names: ReadonlySet<string>): Promise<Map<string, number>> {
  const last = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { reserved: 'committed' },
      { limit: 512, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      const f = ledgerFields.safeParse(p.meta.kilde_ledger);
      if (!f.success || !names.has(f.data.collection_name)) continue;
      last.set(f.data.collection_name, Math.max(last.get(f.data.collection_name) ?? 0, f.data.at));
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return last;
}

/**
 * One page of the documents of a collection: the first chunk (split 0) of each file is its row;
 * `cursor` is the index's own scroll cursor. Files whose versions are being replaced right now may
 * show twice on one page: the page keeps the first of each file_id.
 */
export async function listDocuments(
  index: VectorIndex,
  collectionName: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ documents: DocumentSummary[]; next: string | undefined }> {
  const page = await index.scroll(
    { collectionNames: [collectionName], splitId: 0 },
    { limit, ...(cursor === undefined ? {} : { cursor }) },
  );
  const seen = new Set<string>();
  const documents: DocumentSummary[] = [];
  for (const p of page.points) {
    const fileId = p.meta.file_id;
    if (seen.has(fileId)) continue;
    seen.add(fileId);
    const chunks = await index.count({ fileId, collectionNames: [collectionName] });
    const record = await committedRecord(index, fileId, collectionName);
    documents.push({
      fileId,
      name: text(p.meta.name) ?? text(p.meta.source),
      chunks,
      liveVersion: text(record?.version) ?? text(p.meta.ingest_version),
      languages: languagesOf(p),
      engine: engineOf(p),
      writtenAt: record ? (record.fields.written_at ?? record.fields.at) : null,
    });
  }
  return { documents, next: page.next };
}

/** The collection a file lives in: its live chunks', else its newest kept version's. */
export async function collectionOf(
  index: VectorIndex,
  fileId: string,
  within?: ReadonlySet<string>,
): Promise<string | undefined> {
  // Looked for only inside `within` (a per-tenant key's collections): a copy of the file in another
  // tenant's collection is not there for this caller, not even as a name in an error.
  const scope = within ? { collectionNames: [...within] } : {};
  const page = await index.scroll({ fileId, chunksOnly: true, ...scope }, { limit: 1 });
  const first = page.points[0];
  if (first) return first.meta.collection_name;
  const retired = await retiredEntries(index, fileId);
  return retired.find((e) => within === undefined || within.has(e.collection_name))?.collection_name;
}

/** The versions of a file in a collection: the live one(s) first, then the kept ones, newest first. */
export async function listVersions(
  index: VectorIndex,
  fileId: string,
  collectionName: string,
): Promise<VersionSummary[]> {
  const live = groupByVersion(await allPoints(index, { fileId, collectionNames: [collectionName] }));
  const record = await committedRecord(index, fileId, collectionName);
  const out: VersionSummary[] = [];
  const liveVersions = [...live.keys()].sort((a, b) =>
    a === record?.version ? -1 : b === record?.version ? 1 : a < b ? 1 : -1,
  );
  for (const version of liveVersions) {
    const writtenAt = record?.version === version ? (record.fields.written_at ?? record.fields.at) : null;
    out.push(summarise(version, live.get(version)!, writtenAt, true));
  }
  for (const entry of await retiredEntries(index, fileId, collectionName)) {
    const points = await allPoints(index, { fileId, reserved: 'kept', ingestVersion: entry.version });
    if (points.length === 0) continue;
    out.push(summarise(entry.version, points, entry.written_at ?? null, false));
  }
  return out;
}

async function allPoints(index: VectorIndex, filter: Parameters<VectorIndex['scroll']>[0]) {
  const points: StoredPoint[] = [];
  let cursor: string | undefined;
  do {
    const page = await index.scroll(filter, { limit: 256, ...(cursor === undefined ? {} : { cursor }) });
    points.push(...page.points);
    cursor = page.next;
  } while (cursor !== undefined);
  return points;
}

function groupByVersion(points: readonly StoredPoint[]): Map<string, StoredPoint[]> {
  const by = new Map<string, StoredPoint[]>();
  for (const p of points) {
    const v = typeof p.meta.ingest_version === 'string' ? p.meta.ingest_version : '';
    by.set(v, [...(by.get(v) ?? []), p]);
  }
  return by;
}

/**
 * `content_hash`: SHA-256 over the version's chunk texts in split order (NUL-separated), so two
 * versions with the same hash return the same text to every search.
 */
function summarise(
  version: string,
  points: readonly StoredPoint[],
  writtenAt: number | null,
  live: boolean,
): VersionSummary {
  const ordered = [...points].sort((a, b) => a.meta.split_id - b.meta.split_id);
  const hash = createHash('sha256');
  for (const p of ordered) hash.update(p.content).update('\u0000');
  const first = ordered[0];
  return {
    version,
    writtenAt,
    chunks: points.length,
    engine: first ? engineOf(first) : null,
    source: first ? (text(first.meta.source) ?? text(first.meta.name)) : null,
    contentHash: hash.digest('hex'),
    live,
  };
}

function engineOf(p: StoredPoint): string | null {
  return text(p.meta.extraction_engine) ?? text(p.meta.extractor);
}

function languagesOf(p: StoredPoint): string[] {
  const l = p.meta.languages;
  return Array.isArray(l) ? l.filter((x): x is string => typeof x === 'string') : [];
}

function text(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** A read of the index: its failures answer 502 `VECTORDB_FAILED`. */
export async function reading<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof KildeError) throw err;
    throw new KildeError('VECTORDB_FAILED', 'Reading from the vector index failed', { cause: err });
  }
}

/** One page of a collection's documents; a cursor the index cannot read answers 400. */
export async function documentsPage(
  index: VectorIndex,
  collectionName: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ documents: DocumentSummary[]; next: string | undefined }> {
  try {
    return await listDocuments(index, collectionName, limit, cursor);
  } catch (err) {
    if (cursor !== undefined) throw invalid('cursor is not a cursor this endpoint returned');
    throw new KildeError('VECTORDB_FAILED', 'Reading from the vector index failed', { cause: err });
  }
}

/**
 * The versions of a file in a collection (the collection its live chunks are in when not given).
 * 404 when the file has none there. With `within` (a per-tenant key's collections), a file or
 * collection outside them is missing.
 */
export async function fileVersions(
  index: VectorIndex,
  fileId: string,
  collectionName?: string,
  within?: ReadonlySet<string>,
): Promise<{ collectionName: string; versions: VersionSummary[] }> {
  const collection = collectionName ?? (await reading(() => collectionOf(index, fileId, within)));
  // A collection outside `within` holds nothing for this caller: the same 404 as a missing file.
  const versions =
    collection === undefined || (within && !within.has(collection))
      ? []
      : await reading(() => listVersions(index, fileId, collection));
  if (collection === undefined || versions.length === 0) {
    throw new KildeError(
      'NOT_FOUND',
      `No versions of file_id ${fileId}${collection === undefined ? '' : ` in ${collection}`}`,
    );
  }
  return { collectionName: collection, versions };
}

export interface ChunkPage {
  total: number;
  points: StoredPoint[];
  next?: string;
}

/** One page of a file's stored chunks (read-only inspection): chunks only, not the ledger. */
export async function chunkPage(
  index: VectorIndex,
  fileId: string,
  limit: number,
  cursor: string | undefined,
): Promise<ChunkPage> {
  const total = await index.count({ fileId, chunksOnly: true }).catch((err: unknown) => {
    throw new KildeError('VECTORDB_FAILED', 'Reading from the vector index failed', { cause: err });
  });
  try {
    const page = await index.scroll(
      { fileId, chunksOnly: true },
      { limit, ...(cursor === undefined ? {} : { cursor }) },
    );
    return { total, points: page.points, ...(page.next === undefined ? {} : { next: page.next }) };
  } catch (err) {
    // The index just answered the count, so a failing page with a cursor is the cursor's fault.
    if (cursor !== undefined) throw invalid('offset is not a cursor this endpoint returned');
    throw new KildeError('VECTORDB_FAILED', 'Reading from the vector index failed', { cause: err });
  }
}
