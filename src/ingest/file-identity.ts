import { createHash } from 'node:crypto';
import { documentPath, fileIdFor } from '../index/identifiers.js';
import type { VectorIndex } from '../index/store.js';
import { type IngestTarget, invalid, namedByPath } from './request.js';

/**
 * One identity for a file everywhere (docs/api.md, "One identity for a file"): a document is named
 * by its collection and its path, and its file_id is `fileIdFor(collection, path)`. The CLI (local
 * and `--url`), the console, the jobs API and folder sync all come through here, so a file ingested
 * again is a new version of its document, never a second one.
 *
 * Documents written by older versions keep their ids: when no document has the derived id yet,
 * the ones an older version would have made are looked up and reused (`legacy`), and an upload
 * named only by a file name (a browser's drop) reuses the one document of the collection whose
 * path ends with that name.
 */
export interface IdentityRequest {
  collection: string;
  /** The document's path (`documentPath` is applied). */
  path: string;
  /**
   * Ids an older Kilde gave this file, each with the sources it recorded: reused while the
   * document there still carries one of them (or already carries `path`: a reuse before), so it
   * is claimed by one file only.
   */
  legacy?: readonly { fileId: string; sources: readonly string[] }[];
  /**
   * The path is a name a browser or an HTTP client gave (a dropped file, a folder drop's relative
   * path): reuse the collection's one document whose path ends with it. Two such documents are a
   * 409 (the caller names the file_id or the full path).
   */
  byName?: boolean;
}

export interface Identity {
  fileId: string;
  /** `meta.source` for the new version: the path, or the reused document's longer path. */
  source: string;
}

/** Documents scanned for a name match at most (split-0 points of one collection). */
const NAME_SCAN = 20_000;

/** The file_id Kilde 0.x derived from a path (no NFC, `.` segments kept). */
export function legacyFileIdFor(collection: string, relativePath: string): string {
  const normalised = relativePath
    .split(/[\\/]+/)
    .filter(Boolean)
    .join('/');
  return createHash('sha256').update(`${collection}\u0000${normalised}`).digest('hex').slice(0, 32);
}

async function sourceOf(index: VectorIndex, collection: string, fileId: string): Promise<string | undefined> {
  const page = await index.scroll({ fileId, collectionNames: [collection], splitId: 0 }, { limit: 1 });
  const point = page.points[0];
  if (!point) return undefined;
  const source = point.meta.source;
  return typeof source === 'string' ? source : '';
}

export async function resolveIdentity(index: VectorIndex, r: IdentityRequest): Promise<Identity> {
  const path = documentPath(r.path);
  const derived = fileIdFor(r.collection, path);
  if ((await sourceOf(index, r.collection, derived)) !== undefined) return { fileId: derived, source: path };
  for (const old of r.legacy ?? []) {
    if (old.fileId === derived) continue;
    const source = await sourceOf(index, r.collection, old.fileId);
    if (source !== undefined && (source === path || old.sources.includes(source))) {
      return { fileId: old.fileId, source: path };
    }
  }
  if (r.byName && path !== '') {
    const matches = new Map<string, string>();
    let cursor: string | undefined;
    let seen = 0;
    do {
      const page = await index.scroll(
        { collectionNames: [r.collection], splitId: 0 },
        { limit: 500, ...(cursor ? { cursor } : {}) },
      );
      for (const p of page.points) {
        const source = typeof p.meta.source === 'string' ? documentPath(p.meta.source) : '';
        // The console of Kilde 0.x used the dropped name itself as the file_id.
        if (source === path || source.endsWith(`/${path}`) || p.meta.file_id === r.path) {
          matches.set(p.meta.file_id, source || path);
        }
      }
      seen += page.points.length;
      cursor = page.next;
    } while (cursor !== undefined && seen < NAME_SCAN);
    if (matches.size === 1) {
      const [[fileId, source]] = [...matches.entries()] as [[string, string]];
      return { fileId, source };
    }
    if (matches.size > 1) {
      const sources = [...matches.values()].sort().slice(0, 5);
      throw invalid(
        409,
        `${matches.size} documents in ${r.collection} end in ${path} (${sources.join(', ')}): give the path from a folder that tells them apart, or the file_id`,
      );
    }
  }
  return { fileId: derived, source: path };
}

/**
 * An upload named by its path (no file_id: the console, `kilde ingest --url`) takes the id of the
 * document that path names (`resolveIdentity`); one with a file_id keeps it (the wire contract).
 */
export async function identifyUpload(
  index: VectorIndex,
  target: IngestTarget,
  fields: Record<string, string>,
): Promise<IngestTarget> {
  if (!namedByPath(fields)) return target;
  const legacy = fields.legacy_path
    ? [
        {
          fileId: legacyFileIdFor(target.collectionName, fields.legacy_path),
          sources: [fields.legacy_path, target.filename],
        },
      ]
    : [];
  const found = await resolveIdentity(index, {
    collection: target.collectionName,
    path: target.source,
    legacy,
    // A full path from the CLI names its document exactly; a browser's name may be a suffix.
    byName: fields.legacy_path === undefined,
  });
  return { ...target, ...found };
}
