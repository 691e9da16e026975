import { z } from 'zod';
import { type ErrorVariant, KildeError } from '../errors.js';
import { multipartForm } from '../http/openapi.js';
import {
  collectionNameProblem,
  collectionNameSchema,
  documentPath,
  fileIdFor,
  identifierProblem,
  identifierRefinement,
} from '../index/identifiers.js';

/** What every ingest needs to know about the file, whichever way it arrived. */
export interface IngestTarget {
  fileId: string;
  filename: string;
  collectionName: string;
  collectionType: string;
  userId: string;
  overwrite: boolean;
  /** `meta.source`: `s3://bucket/key` or the uploaded file's name. */
  source: string;
}

/** Identifiers and names: trimmed, not blank, no control characters (src/index/identifiers.ts). */
const required = (name: string) =>
  z
    .string({ error: `${name} must be a string` })
    // Checked before trimming: a tab or newline at either end is refused, not silently dropped.
    .superRefine(identifierRefinement(name))
    .trim()
    .min(1, `${name} must not be blank`);
/** Absent or null: Python clients commonly send `None` for a field they leave open. */
const optional = (name: string) =>
  required(name)
    .nullish()
    .transform((v) => v ?? undefined);

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

/** `true/1/yes` or `false/0/no` (case-insensitive); anything else is a 400. */
export function parseFlag(name: string, value: string): boolean {
  const v = value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw invalid(`${name} must be one of true/1/yes or false/0/no`);
}

/**
 * JSON body (the object-storage reference). Open WebUI sends `s3_bucket`/`s3_key`; the reference
 * deployment's contract says `bucket`/`key`; both are accepted. Fields Kilde does not know are
 * ignored (a newer chat platform may send more); known fields are type-checked.
 */
export const jsonBody = z.object({
  s3_bucket: optional('s3_bucket'),
  s3_key: optional('s3_key'),
  bucket: optional('bucket'),
  key: optional('key'),
  file_id: required('file_id'),
  filename: optional('filename'),
  collection_name: required('collection_name').pipe(collectionNameSchema),
  collection_type: optional('collection_type'),
  user_id: required('user_id'),
  overwrite: z
    .union([z.boolean(), z.string()], { error: 'overwrite must be a boolean' })
    .nullish()
    .transform((v) => v ?? undefined),
});

export const JSON_FIELDS = Object.keys(jsonBody.shape);

/** The fields of a body Kilde does not know (and ignores): logged at DEBUG by the route. */
export function unknownFields(body: unknown, known: readonly string[]): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  return Object.keys(body).filter((k) => !known.includes(k));
}

export interface ObjectIngest extends IngestTarget {
  bucket: string;
  key: string;
}

export function parseJsonIngest(body: unknown): ObjectIngest {
  if (body === undefined || body === null) throw invalid('Request body is empty');
  const result = jsonBody.safeParse(body);
  if (!result.success) throw invalid(`Invalid request: ${describeIssues(result.error)}`);
  const parsed = result.data;
  const bucket = pick('bucket', parsed.s3_bucket, parsed.bucket);
  const key = pick('key', parsed.s3_key, parsed.key);
  const filename = parsed.filename ?? key.split('/').at(-1) ?? key;
  return {
    bucket,
    key,
    fileId: parsed.file_id,
    filename,
    collectionName: parsed.collection_name,
    collectionType: parsed.collection_type ?? 'file',
    userId: parsed.user_id,
    overwrite:
      typeof parsed.overwrite === 'string'
        ? parseFlag('overwrite', parsed.overwrite)
        : (parsed.overwrite ?? true),
    source: `s3://${bucket}/${key}`,
  };
}

function pick(name: string, a: string | undefined, b: string | undefined): string {
  if (a !== undefined && b !== undefined && a !== b) {
    throw invalid(`Invalid request: s3_${name} and ${name} disagree`);
  }
  const v = a ?? b;
  if (v === undefined) throw invalid(`Invalid request: s3_${name} (or ${name}) is required`);
  return v;
}

/** Form fields of a multipart upload (all strings on the wire); unknown ones are ignored. */
export const formFields = z.object({
  /** Absent: derived from the collection and `path` (src/ingest/file-identity.ts). */
  file_id: optional('file_id'),
  /** The document's path (a folder drop's relative path); absent: `filename`, else the part's name. */
  path: optional('path'),
  /** `kilde ingest --url`: the name Kilde 0.x gave the file, whose file_id is reused (file-identity.ts). */
  legacy_path: optional('legacy_path'),
  filename: optional('filename'),
  collection_name: required('collection_name').pipe(collectionNameSchema),
  collection_type: optional('collection_type'),
  user_id: required('user_id'),
  overwrite: optional('overwrite'),
});

export const FORM_FIELDS = Object.keys(formFields.shape);

/** The two bodies an ingest (and a job) takes, for the OpenAPI document (src/http/openapi.ts). */
export const ingestBodyDocs = {
  'application/json': jsonBody,
  'multipart/form-data': multipartForm(formFields),
};

export function parseFormIngest(
  fields: Record<string, string>,
  uploadedName: string | undefined,
): IngestTarget {
  const result = formFields.safeParse(fields);
  if (!result.success) throw invalid(`Invalid request: ${describeIssues(result.error)}`);
  const f = result.data;
  const filename = f.filename ?? (uploadedName?.trim() || undefined);
  if (filename === undefined) throw invalid('Invalid request: filename is required');
  const path = documentPath(f.path ?? filename);
  if (f.file_id === undefined && path === '') throw invalid('Invalid request: file_id or path is required');
  return {
    fileId: f.file_id ?? fileIdFor(f.collection_name, path),
    filename,
    collectionName: f.collection_name,
    collectionType: f.collection_type ?? 'file',
    userId: f.user_id,
    overwrite: f.overwrite === undefined ? true : parseFlag('overwrite', f.overwrite),
    source: f.path === undefined ? filename : path,
  };
}

/**
 * An upload without a file_id is named by its path: the caller resolves it against the index
 * (`resolveIdentity`, byName) before ingesting, so it reuses the document it names.
 */
export function namedByPath(fields: Record<string, string>): boolean {
  return fields.file_id === undefined || fields.file_id.trim() === '';
}

/**
 * Tenant rules: `file-…` collections belong to one file and `user-memory-…` collections to one user,
 * so a caller cannot write into another file's or user's collection by naming it. Others pass.
 */
export function checkCollection(target: Pick<IngestTarget, 'collectionName' | 'fileId' | 'userId'>) {
  const { collectionName, fileId, userId } = target;
  const problem = collectionNameProblem(collectionName);
  if (problem) throw invalid(`Invalid request: ${problem}`);
  if (collectionName.startsWith('file-') && collectionName !== `file-${fileId}`) {
    throw invalid('collection_name must be file-{file_id} for file collections', 'forbidden');
  }
  if (collectionName.startsWith('user-memory-') && collectionName !== `user-memory-${userId}`) {
    throw invalid('collection_name must be user-memory-{user_id} for user memory collections', 'forbidden');
  }
}

/** INVALID_REQUEST: 400 unless `variant` names another case of the table (403 `forbidden`...). */
export function invalid(message: string, variant?: ErrorVariant<'INVALID_REQUEST'>): KildeError {
  return new KildeError('INVALID_REQUEST', message, { variant });
}

/**
 * A file's name or path from outside that no schema field checked (a multipart part's own
 * filename, a header, a folder's file): held to the identifier rule, so a NUL, `\x01` or a terminal
 * escape (ESC) is a 400 naming where it came from, never a name logged, stored or shown.
 */
export function checkFileName(name: string, where: string): void {
  const problem = identifierProblem(name);
  if (problem !== undefined) throw invalid(`Invalid request: ${where} ${problem}`);
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      if (i.code === 'unrecognized_keys') return `unknown field(s) ${i.keys.join(', ')}`;
      const path = i.path.map(String).join('.');
      if (i.code === 'invalid_type' && i.input === undefined) return `${path} is required`;
      return i.message.startsWith(path) || path === '' ? i.message : `${path}: ${i.message}`;
    })
    .join('; ');
}
