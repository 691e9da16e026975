import { createHash } from 'node:crypto';
import { KildeError } from '../errors.js';
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
  /**
   * The path is a full path (the CLI's): a document named by one of its tails (uploaded in a
   * console as `readme.md`) that still carries that name becomes this file's.
   */
  tails?: boolean;
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

/** Candidate ids looked up per query (one `file_id IN (…)` read). */
const LOOKUP_IDS = 256;

/** `meta.source` of each of `ids` that has a document in the collection ('' when it records none). */
async function sourcesOf(
  index: VectorIndex,
  collection: string,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const unique = [...new Set(ids)];
  for (let i = 0; i < unique.length; i += LOOKUP_IDS) {
    const fileIds = unique.slice(i, i + LOOKUP_IDS);
    let cursor: string | undefined;
    do {
      const page = await index.scroll(
        { fileIds, collectionNames: [collection], splitId: 0 },
        { limit: 500, metaOnly: true, ...(cursor ? { cursor } : {}) },
      );
      for (const p of page.points) {
        found.set(p.meta.file_id, typeof p.meta.source === 'string' ? p.meta.source : '');
      }
      cursor = page.next;
    } while (cursor !== undefined);
  }
  return found;
}

/** The proper tails of a path at its slashes, longest first (`a/b/c.md` → `b/c.md`, `c.md`). */
function tails(path: string): string[] {
  const parts = path.split('/');
  return parts.slice(1).map((_, i) => parts.slice(i + 1).join('/'));
}

/** The ids a request could take, in the order they are preferred, with the sources that allow each. */
function candidates(
  r: IdentityRequest,
  path: string,
): { fileId: string; accepts: (source: string) => boolean }[] {
  const out: { fileId: string; accepts: (source: string) => boolean }[] = [];
  for (const old of r.legacy ?? []) {
    out.push({ fileId: old.fileId, accepts: (s) => s === path || old.sources.includes(s) });
  }
  if (r.tails) {
    // A document named by a tail of this path (a file uploaded in a console, or by a CLI run from
    // a folder further down) that still carries that name: this file's, from now on.
    for (const tail of tails(path)) {
      const accepts = (s: string) => documentPath(s) === tail;
      out.push({ fileId: fileIdFor(r.collection, tail), accepts });
      // The console of Kilde 0.x used the dropped name itself as the file_id.
      out.push({ fileId: tail, accepts });
    }
  }
  return out;
}

/**
 * The identities of many requests of one collection at once (a CLI pass, a job batch): one read
 * for every candidate id, one scan of the collection for all the names a browser gave. A document
 * is given to one request only, the first that claims it. A request that cannot be told apart (two
 * documents end in its name) gets its error in its place; the others are resolved.
 */
export async function resolveIdentitiesSettled(
  index: VectorIndex,
  collection: string,
  requests: readonly IdentityRequest[],
): Promise<Array<Identity | KildeError>> {
  const paths = requests.map((r) => documentPath(r.path));
  const derived = paths.map((p) => fileIdFor(collection, p));
  const options = requests.map((r, i) => candidates(r, paths[i]!));
  const sources = await sourcesOf(index, collection, [...derived, ...options.flat().map((c) => c.fileId)]);
  const claimed = new Set<string>();
  const chosen: Array<Identity | KildeError | undefined> = requests.map((_, i) => {
    const path = paths[i]!;
    if (sources.has(derived[i]!)) {
      claimed.add(derived[i]!);
      return { fileId: derived[i]!, source: path };
    }
    for (const c of options[i]!) {
      const source = sources.get(c.fileId);
      if (source !== undefined && c.fileId !== derived[i] && !claimed.has(c.fileId) && c.accepts(source)) {
        claimed.add(c.fileId);
        return { fileId: c.fileId, source: path };
      }
    }
    return undefined;
  });
  const named = requests.flatMap((r, i) => (!chosen[i] && r.byName && paths[i] !== '' ? [i] : []));
  if (named.length > 0) {
    const found = await byNames(
      index,
      collection,
      named.map((i) => ({ path: paths[i]!, raw: requests[i]!.path })),
    );
    named.forEach((i, k) => {
      chosen[i] = found[k];
    });
  }
  return chosen.map((c, i) => {
    if (c instanceof KildeError) return c;
    const identity = c ?? { fileId: derived[i]!, source: paths[i]! };
    claimed.add(identity.fileId);
    return identity;
  });
}

/** As `resolveIdentitiesSettled`; the first request that cannot be resolved throws its error. */
export async function resolveIdentities(
  index: VectorIndex,
  collection: string,
  requests: readonly IdentityRequest[],
): Promise<Identity[]> {
  const settled = await resolveIdentitiesSettled(index, collection, requests);
  return settled.map((s) => {
    if (s instanceof KildeError) throw s;
    return s;
  });
}

export async function resolveIdentity(index: VectorIndex, r: IdentityRequest): Promise<Identity> {
  const [one] = await resolveIdentities(index, r.collection, [r]);
  return one!;
}

/**
 * For each name, the collection's one document whose path is it or ends with `/name` (a browser's
 * name): one scan for all of them. Two such documents are that name's 409.
 */
async function byNames(
  index: VectorIndex,
  collection: string,
  names: readonly { path: string; raw: string }[],
): Promise<Array<Identity | KildeError | undefined>> {
  const matches = names.map(() => new Map<string, string>());
  let cursor: string | undefined;
  let seen = 0;
  do {
    const page = await index.scroll(
      { collectionNames: [collection], splitId: 0 },
      { limit: 500, metaOnly: true, ...(cursor ? { cursor } : {}) },
    );
    for (const p of page.points) {
      const source = typeof p.meta.source === 'string' ? documentPath(p.meta.source) : '';
      names.forEach(({ path, raw }, k) => {
        // The console of Kilde 0.x used the dropped name itself as the file_id.
        if (source === path || source.endsWith(`/${path}`) || p.meta.file_id === raw) {
          matches[k]!.set(p.meta.file_id, source || path);
        }
      });
    }
    seen += page.points.length;
    cursor = page.next;
  } while (cursor !== undefined && seen < NAME_SCAN);
  return names.map(({ path }, k) => {
    const found = matches[k]!;
    if (found.size > 1) {
      const sources = [...found.values()].sort().slice(0, 5);
      return invalid(
        `${found.size} documents in ${collection} end in ${path} (${sources.join(', ')}): give the path from a folder that tells them apart, or the file_id`,
        'conflict',
      );
    }
    const [first] = [...found.entries()];
    return first ? { fileId: first[0], source: first[1] } : undefined;
  });
}

/** The identity request of an upload named by its path (its form fields say how it was named). */
function uploadRequest(target: IngestTarget, fields: Record<string, string>): IdentityRequest {
  const legacy = fields.legacy_path
    ? [
        {
          fileId: legacyFileIdFor(target.collectionName, fields.legacy_path),
          sources: [fields.legacy_path, target.filename],
        },
      ]
    : [];
  const cli = fields.legacy_path !== undefined;
  return {
    collection: target.collectionName,
    path: target.source,
    legacy,
    // A full path from the CLI may end in a browser's name; a browser's name may end a full path.
    tails: cli,
    byName: !cli,
  };
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
  const [one] = await identifyUploads(index, [{ target, fields }]);
  if (one instanceof KildeError) throw one;
  return one!;
}

/**
 * `identifyUpload` for many uploads (a job batch): one lookup per collection for all of them. An
 * upload that cannot be resolved gets its error in its place.
 */
export async function identifyUploads(
  index: VectorIndex,
  uploads: readonly { target: IngestTarget; fields: Record<string, string> }[],
): Promise<Array<IngestTarget | KildeError>> {
  const out: Array<IngestTarget | KildeError> = uploads.map((u) => u.target);
  const byCollection = new Map<string, number[]>();
  uploads.forEach((u, i) => {
    if (!namedByPath(u.fields)) return;
    const list = byCollection.get(u.target.collectionName) ?? [];
    list.push(i);
    byCollection.set(u.target.collectionName, list);
  });
  for (const [collection, at] of byCollection) {
    const found = await resolveIdentitiesSettled(
      index,
      collection,
      at.map((i) => uploadRequest(uploads[i]!.target, uploads[i]!.fields)),
    );
    at.forEach((i, k) => {
      const f = found[k]!;
      out[i] = f instanceof KildeError ? f : { ...uploads[i]!.target, ...f };
    });
  }
  return out;
}
