import type { Schemas } from '@qdrant/js-client-rest';
import { z } from 'zod';
import { KildeError } from '../errors.js';
import type { IndexFilter } from './contract.js';
import { matchesNothing, toQdrantFilter } from './qdrant-filter.js';

/** Most first chunks (one per file version) read to resolve a source prefix to file ids. */
export const SOURCE_PREFIX_SCAN = 10_000;

export const sourcePage = z.object({
  points: z.array(
    z.object({
      payload: z
        .object({ meta: z.object({ file_id: z.unknown(), source: z.unknown() }).partial().nullish() })
        .nullish(),
    }),
  ),
  next_page_offset: z.union([z.string(), z.number()]).nullish(),
});

/**
 * Qdrant has no prefix condition on a keyword. A source prefix becomes the set of file ids whose
 * `meta.source` starts with it: the first chunk of every file the rest of the filter admits is
 * read (`split_id` 0, two payload fields, pages of 1000, at most SOURCE_PREFIX_SCAN), and the
 * query itself then filters on `meta.file_id`, inside Qdrant like every other condition. `scroll`
 * sends one scroll request (the adapter's, with its read consistency).
 */
export async function resolveSourcePrefix(
  filter: IndexFilter,
  scroll: (body: Schemas['ScrollRequest']) => Promise<z.infer<typeof sourcePage>>,
): Promise<IndexFilter> {
  if (filter.sourcePrefix === undefined) return filter;
  const { sourcePrefix, ...rest } = filter;
  if (matchesNothing(rest)) return rest;
  const scan = toQdrantFilter({ ...rest, splitId: 0 })!;
  const found = new Set<string>();
  let offset: string | number | undefined;
  let scanned = 0;
  do {
    const body: Schemas['ScrollRequest'] = {
      filter: scan,
      limit: 1000,
      with_payload: { include: ['meta.file_id', 'meta.source'] },
      with_vector: false,
    };
    if (offset !== undefined) body.offset = offset;
    const res = await scroll(body);
    for (const p of res.points) {
      const meta = p.payload?.meta;
      if (
        typeof meta?.source === 'string' &&
        typeof meta.file_id === 'string' &&
        meta.source.startsWith(sourcePrefix)
      )
        found.add(meta.file_id);
    }
    scanned += res.points.length;
    offset = res.next_page_offset ?? undefined;
    if (offset !== undefined && scanned >= SOURCE_PREFIX_SCAN) {
      throw new KildeError(
        'INVALID_REQUEST',
        `source_prefix: the collections searched hold more than ${SOURCE_PREFIX_SCAN} files; narrow the search with file_ids or fewer collections`,
      );
    }
  } while (offset !== undefined);
  const fileIds = rest.fileIds ? rest.fileIds.filter((id) => found.has(id)) : [...found];
  return { ...rest, fileIds };
}
