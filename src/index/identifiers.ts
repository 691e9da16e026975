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
