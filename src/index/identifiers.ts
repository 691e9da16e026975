import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * Identifier rules shared by every way in (ingest, search, the CLI, MCP tools), so that what one
 * accepts the others can find. A collection name is the tenant key `meta.collection_name`.
 */
export const COLLECTION_NAME_RULE =
  '1 to 128 characters: letters and digits of any script, "_", "-", "." and spaces; it starts with a letter, digit or "_" and does not end with a space';

const COLLECTION_NAME = /^[\p{L}\p{N}_](?:[\p{L}\p{M}\p{N}_.\- ]*[\p{L}\p{M}\p{N}_.-])?$/u;

/** Names are compared in Unicode NFC, so "æ" typed on any keyboard is one name. */
export function normaliseCollectionName(name: string): string {
  return name.normalize('NFC');
}

/** Why `name` is not a valid collection name, or undefined when it is (after NFC normalisation). */
export function collectionNameProblem(name: string): string | undefined {
  const n = normaliseCollectionName(name);
  if ([...n].length > 128 || !COLLECTION_NAME.test(n)) {
    return `collection name ${JSON.stringify(name)} is not valid: use ${COLLECTION_NAME_RULE}`;
  }
  return undefined;
}

/** The rule as a zod string (NFC-normalised on the way in). */
export const collectionNameSchema = z
  .string()
  .transform(normaliseCollectionName)
  .superRefine((name, ctx) => {
    const problem = collectionNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * What every identifier a caller hands Kilde must satisfy (file ids, collection names, user ids,
 * object keys and buckets): no control characters (Unicode Cc: C0 including NUL, DEL, C1) and no
 * lone surrogates. Stored identifiers are compared exactly by the index; a NUL or an unpaired
 * surrogate turns into something else on some paths (C strings, UTF-8 re-encoding) and leaves
 * points that their own id no longer reaches. It also keeps Kilde's reserved tenants
 * (src/index/reserved.ts) out of reach.
 */
const FORBIDDEN = /[\p{Cc}\p{Cs}]/u;

/** Why `value` cannot be an identifier, or undefined when it can. */
export function identifierProblem(value: string): string | undefined {
  const bad = FORBIDDEN.exec(value);
  if (!bad) return undefined;
  const code = bad[0].codePointAt(0) ?? 0;
  const at = `U+${code.toString(16).toUpperCase().padStart(4, '0')} at position ${bad.index}`;
  return code >= 0xd800 && code <= 0xdfff
    ? `must be well-formed Unicode (lone surrogate ${at})`
    : `must not contain control characters (${at})`;
}

/** A zod check for identifier fields: `name: problem` as the issue message. */
export function identifierRefinement(name: string) {
  return (value: string, ctx: z.RefinementCtx) => {
    const problem = identifierProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `${name} ${problem}` });
  };
}

/**
 * A document's path, the one name of a file everywhere (docs/api.md, "One identity for a file"):
 * `/`-separated, without empty or `.` segments, in Unicode NFC. The CLI's path is relative to its
 * root (`--root`, else the enclosing repository, else `/`); a browser's or an HTTP upload's is the
 * name it gives (`path`, else `filename`, else the uploaded part's name).
 */
export function documentPath(path: string): string {
  return path
    .normalize('NFC')
    .split(/[\\/]+/)
    .filter((s) => s !== '' && s !== '.')
    .join('/');
}

/**
 * The file_id of a document: a hash of its collection and its path (`documentPath`), so ingesting
 * the same file again, from the CLI, the console or a job, makes a new version of one document
 * instead of adding a copy, and two files of one name in different folders stay two documents.
 */
export function fileIdFor(collection: string, path: string): string {
  return createHash('sha256')
    .update(`${collection}\u0000${documentPath(path)}`)
    .digest('hex')
    .slice(0, 32);
}
