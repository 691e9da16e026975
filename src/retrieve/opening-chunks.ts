import type { SearchHit, StoredPoint } from '../index/contract.js';
import type { VectorIndex } from '../index/store.js';
import type { ExtraFilter } from './explain.js';

/**
 * "Summarise the attached file", "tl;dr", "what are the key points?" name nothing a search can
 * match, so on a file attached to a chat they found nothing and the model answered without the
 * document. When a query finds nothing in a small collection set (at most `maxChunks` chunks: an
 * attached file or a few), the opening chunks of its files answer instead, in reading order, with
 * score 0 (matched nothing). Larger knowledge bases keep answering only what matched.
 */
export function createOpeningChunks(index: VectorIndex, maxChunks: number) {
  return {
    /** The opening chunks for a request, or undefined when the collections are not small. */
    async load(
      collectionNames: readonly string[],
      k: number,
      extra: ExtraFilter = {},
    ): Promise<SearchHit[] | undefined> {
      if (maxChunks <= 0) return undefined;
      const filter = { ...extra, collectionNames };
      const total = await index.count(filter);
      if (total === 0 || total > maxChunks) return undefined;
      const points: StoredPoint[] = [];
      let cursor: string | undefined;
      do {
        const page = await index.scroll(filter, {
          limit: maxChunks,
          ...(cursor === undefined ? {} : { cursor }),
        });
        points.push(...page.points);
        cursor = page.next;
      } while (cursor !== undefined && points.length <= maxChunks);
      return opening(points, collectionNames, k);
    },
  };
}

/**
 * k chunks shared round-robin across the files (each file's first chunks), files in the order of
 * the requested collections, then grouped per file in reading order (split_id).
 */
export function opening(
  points: readonly StoredPoint[],
  collectionNames: readonly string[],
  k: number,
): SearchHit[] {
  const byFile = new Map<string, StoredPoint[]>();
  const rank = (p: StoredPoint) => collectionNames.indexOf(p.meta.collection_name);
  const sorted = [...points].sort(
    (a, b) =>
      rank(a) - rank(b) || a.meta.file_id.localeCompare(b.meta.file_id) || a.meta.split_id - b.meta.split_id,
  );
  for (const p of sorted) {
    const key = `${p.meta.collection_name}\u0000${p.meta.file_id}`;
    const list = byFile.get(key);
    if (list) list.push(p);
    else byFile.set(key, [p]);
  }
  const files = [...byFile.values()];
  const take = files.map(() => 0);
  for (let picked = 0, round = 0; picked < k; round++) {
    let any = false;
    files.forEach((f, i) => {
      if (picked < k && round < f.length) {
        take[i]! += 1;
        picked += 1;
        any = true;
      }
    });
    if (!any) break;
  }
  return files.flatMap((f, i) => f.slice(0, take[i]).map((p) => ({ ...p, score: 0 })));
}
