/**
 * Consecutive items, in their order, in runs of at most `maxItems` items and `maxWeight` in total
 * weight; an item heavier than `maxWeight` makes a run alone. The local ingest's passes
 * (src/cli/passes.ts), a job batch's passes (src/ingest/jobs/batch-runner.ts) and Qdrant's shared
 * write requests (src/versions/write-together.ts) all cut their work this way. `weightOf` is called
 * once per item.
 */
export function packRuns<T>(
  items: readonly T[],
  weightOf: (item: T, index: number) => number,
  limits: { maxWeight: number; maxItems?: number },
): T[][] {
  const maxItems = limits.maxItems ?? Number.POSITIVE_INFINITY;
  const runs: T[][] = [];
  let open: T[] = [];
  let weight = 0;
  items.forEach((item, i) => {
    const w = weightOf(item, i);
    if (open.length > 0 && (open.length >= maxItems || weight + w > limits.maxWeight)) {
      runs.push(open);
      open = [];
      weight = 0;
    }
    open.push(item);
    weight += w;
  });
  if (open.length > 0) runs.push(open);
  return runs;
}
