import type { Schemas } from '@qdrant/js-client-rest';
import { checkFilterInstant, type IndexFilter } from './contract.js';
import { publicTenants, RESERVED_TENANT_VALUES, RESERVED_TENANTS } from './reserved.js';

type Filter = Schemas['Filter'];
type FieldCondition = Schemas['FieldCondition'];

/** True when the filter can match no point at all (an empty tenant or language set). */
export function matchesNothing(f: IndexFilter): boolean {
  return (
    (f.collectionNames !== undefined && publicTenants(f.collectionNames).length === 0) ||
    f.languages?.length === 0 ||
    f.fileIds?.length === 0 ||
    f.collectionTypes?.length === 0
  );
}

/**
 * Translates the typed filter into Qdrant's payload filter. Keys are the Haystack payload paths
 * (`meta.*`). `must_not` on `meta.ingest_version` also keeps points that lack the field, which is
 * exactly "differs from this, or is missing". Returns undefined for an empty filter.
 */
export function toQdrantFilter(f: IndexFilter): Filter | undefined {
  const must: FieldCondition[] = [];
  const mustNot: FieldCondition[] = [];
  if (f.reserved !== undefined) {
    must.push({ key: 'meta.collection_name', match: { value: RESERVED_TENANTS[f.reserved] } });
  }
  if (f.collectionNames !== undefined) {
    // Qdrant refuses repeated values in `match.any` (uniqueItems).
    must.push({ key: 'meta.collection_name', match: { any: unique(publicTenants(f.collectionNames)) } });
  }
  if (f.chunksOnly) {
    mustNot.push({ key: 'meta.collection_name', match: { any: [...RESERVED_TENANT_VALUES] } });
  }
  if (f.fileId !== undefined) must.push({ key: 'meta.file_id', match: { value: f.fileId } });
  if (f.ingestVersion !== undefined) {
    must.push({ key: 'meta.ingest_version', match: { value: f.ingestVersion } });
  }
  if (f.notIngestVersion !== undefined) {
    mustNot.push({ key: 'meta.ingest_version', match: { value: f.notIngestVersion } });
  }
  if (f.splitId !== undefined) must.push({ key: 'meta.split_id', match: { value: f.splitId } });
  if (f.languages !== undefined) {
    must.push({ key: 'meta.languages', match: { any: unique(f.languages) } });
  }
  if (f.fileIds !== undefined) must.push({ key: 'meta.file_id', match: { any: unique(f.fileIds) } });
  if (f.collectionTypes !== undefined) {
    must.push({ key: 'meta.collection_type', match: { any: unique(f.collectionTypes) } });
  }
  if (f.createdAfter !== undefined || f.createdBefore !== undefined) {
    // A datetime range: Qdrant parses the stored RFC 3339 strings (a point without one never matches).
    const range: Schemas['DatetimeRange'] = {};
    if (f.createdAfter !== undefined) range.gt = checkFilterInstant(f.createdAfter);
    if (f.createdBefore !== undefined) range.lt = checkFilterInstant(f.createdBefore);
    must.push({ key: 'meta.created_at', range });
  }
  // Qdrant has no prefix condition on a keyword: the adapter resolves a source prefix to the file
  // ids it names before a filter is built (resolveSourcePrefix in qdrant.ts).
  if (f.sourcePrefix !== undefined) throw new Error('a source prefix must be resolved to file ids first');
  if (must.length === 0 && mustNot.length === 0) return undefined;
  const filter: Filter = {};
  if (must.length > 0) filter.must = must;
  if (mustNot.length > 0) filter.must_not = mustNot;
  return filter;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/**
 * One filter matching any of `filters` (a `should` of them), or undefined when none can match
 * anything. Every filter must narrow: one that would match every point throws `refusal`.
 */
export function anyOf(filters: readonly IndexFilter[], refusal: string): Filter | undefined {
  const parts: Filter[] = [];
  for (const one of filters) {
    const f = toQdrantFilter(one);
    if (!f) throw new Error(refusal);
    if (!matchesNothing(one)) parts.push(f);
  }
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0]! : { should: parts };
}
