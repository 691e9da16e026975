import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { type IndexFilter, type IndexPoint, pointId } from '../index/contract.js';
import { LEDGER_TYPE, RESERVED_TENANTS } from '../index/reserved.js';
import type { PointStore } from '../index/store.js';

/**
 * The version ledger of the crash-consistent versioned replace (publish.ts): version ids and
 * fences, the ledger entries (`writing`, `committed`, `retired`) and the reads over them.
 */

/** One version of one file in one collection (publish.ts). */
export interface VersionScope {
  fileId: string;
  collectionName: string;
  version: string;
}

/** 32 lowercase hex characters (128 random bits). */
export function newIngestVersion(): string {
  return randomBytes(16).toString('hex');
}

/**
 * A version written under a fenced lease (Redis): the fence as 16 hex digits, a dot, 16 random hex
 * digits. The fence orders the versions of a file_id; {@link fenceOf} reads it back.
 */
export function fencedVersion(fence: number): string {
  return `${fence.toString(16).padStart(16, '0')}.${randomBytes(8).toString('hex')}`;
}

/** The fence a version was written under; 0 for a version written without one (older than any fenced). */
export function fenceOf(version: string): number {
  const m = /^([0-9a-f]{16})\.[0-9a-f]{16}$/.exec(version);
  return m ? Number.parseInt(m[1]!, 16) : 0;
}

/** Whether the file already has points in this collection (the `overwrite=false` check). */
export async function hasIndexedVersion(index: PointStore, fileId: string, collectionName: string) {
  return (await index.count({ fileId, collectionNames: [collectionName] })) > 0;
}

/** `meta.kilde_ledger` of a ledger entry. */
export const ledgerFields = z.object({
  collection_name: z.string(),
  points: z.number().int().nonnegative(),
  /**
   * Milliseconds since the epoch: last sign of life (`writing`), commit time (`committed`) or
   * retirement time (`retired`).
   */
  at: z.number(),
  /** When the version was first written (`committed` of a restored version, `retired`); else `at`. */
  written_at: z.number().nullish(),
  /** A `writing` entry of a restore: the version's points are kept ones, never deleted by the sweep. */
  restore: z.boolean().optional(),
});
export type LedgerFields = z.infer<typeof ledgerFields>;

type LedgerKind = 'writing' | 'committed' | 'retired';

export function ledgerEntry(
  kind: LedgerKind,
  scope: VersionScope,
  points: number,
  at: number,
  extra: { written_at?: number | null; restore?: boolean } = {},
) {
  // `writing` and `retired` entries are per version, `committed` ones per (collection, file): a
  // commit overwrites the previous record. The control character keeps these ids apart from every chunk's.
  const key = kind === 'committed' ? scope.collectionName : scope.version;
  const entry: IndexPoint = {
    id: pointId(scope.fileId, `\u0001${kind}\u0001${key}`, 0),
    content: '',
    meta: {
      collection_name: RESERVED_TENANTS[kind],
      collection_type: LEDGER_TYPE,
      file_id: scope.fileId,
      ingest_version: scope.version,
      split_id: 0,
      kilde_ledger: { collection_name: scope.collectionName, points, at, ...extra },
    },
  };
  return entry;
}

/** This version's points, wherever they are (staged, published, ledger entries naming it). */
export const everything = (s: VersionScope): IndexFilter => ({ fileId: s.fileId, ingestVersion: s.version });
/** The other versions of the file in its collection. */
export const others = (s: VersionScope): IndexFilter => ({
  fileId: s.fileId,
  collectionNames: [s.collectionName],
  notIngestVersion: s.version,
});
export const writingEntryOf = (s: VersionScope): IndexFilter => ({
  reserved: 'writing',
  fileId: s.fileId,
  ingestVersion: s.version,
});

/** A kept version of a file, as its `retired` ledger entry records it. */
export interface RetiredEntry extends LedgerFields {
  version: string;
}

/** The `retired` entries of a file in one collection, newest retirement first. */
export async function retiredEntries(
  index: PointStore,
  fileId: string,
  collectionName?: string,
): Promise<RetiredEntry[]> {
  const entries: RetiredEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { reserved: 'retired', fileId },
      { limit: 256, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      const fields = ledgerFields.safeParse(p.meta.kilde_ledger);
      if (!fields.success) continue;
      if (collectionName !== undefined && fields.data.collection_name !== collectionName) continue;
      entries.push({ ...fields.data, version: p.meta.ingest_version });
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return entries.sort(
    (a, b) =>
      b.at - a.at ||
      (b.written_at ?? 0) - (a.written_at ?? 0) ||
      (a.version < b.version ? 1 : a.version > b.version ? -1 : 0),
  );
}

/** The `committed` record of a file in one collection: the version it names, and when written. */
export async function committedRecord(
  index: PointStore,
  fileId: string,
  collectionName: string,
): Promise<{ version: string; fields: LedgerFields } | undefined> {
  const page = await index.scroll({ reserved: 'committed', fileId }, { limit: 256 });
  for (const p of page.points) {
    const fields = ledgerFields.safeParse(p.meta.kilde_ledger);
    if (fields.success && fields.data.collection_name === collectionName) {
      return { version: p.meta.ingest_version, fields: fields.data };
    }
  }
  return undefined;
}

/** When the version the committed record names was written (a retirement records it). */
export async function committedTimes(index: PointStore, scope: VersionScope): Promise<Map<string, number>> {
  const record = await committedRecord(index, scope.fileId, scope.collectionName);
  if (!record) return new Map();
  return new Map([[record.version, record.fields.written_at ?? record.fields.at]]);
}

/** The distinct versions of a file's chunks in one collection, with their point counts. */
export async function versionsIn(index: PointStore, scope: VersionScope): Promise<Map<string, number>> {
  const versions = new Map<string, number>();
  let cursor: string | undefined;
  do {
    const page = await index.scroll(
      { fileId: scope.fileId, collectionNames: [scope.collectionName], chunksOnly: true },
      { limit: 256, ...(cursor === undefined ? {} : { cursor }) },
    );
    for (const p of page.points) {
      const v = p.meta.ingest_version;
      if (typeof v === 'string') versions.set(v, (versions.get(v) ?? 0) + 1);
    }
    cursor = page.next;
  } while (cursor !== undefined);
  return versions;
}

export function scopeOf(e: VersionScope): VersionScope {
  return { fileId: e.fileId, collectionName: e.collectionName, version: e.version };
}
