import type { Table } from '@lancedb/lancedb';
import { DENSE_COLUMN, POINT_COLUMNS } from '../../src/index/lancedb-rows.js';
import { percentile } from './stats.js';

/** One dense query of a grid: its vector and the tenant predicate every Kilde query carries. */
export interface GridQuery {
  vector: number[];
  where: string;
}

/** One query-time setting of the vector index: HNSW `ef` and LanceDB's refine factor (none: unset). */
export interface GridSetting {
  ef: number;
  refine: number | undefined;
}

export interface GridRow extends GridSetting {
  recall: number;
  p50: number;
  p99: number;
}

/** Every combination of the given ef values and refine factors (undefined: no refine step). */
export function gridOf(efs: readonly number[], refines: readonly (number | undefined)[]): GridSetting[] {
  return efs.flatMap((ef) => refines.map((refine) => ({ ef, refine })));
}

/** Parses `--refines none,2,5` into refine factors (`none`: no refine step). */
export function parseRefines(list: string): (number | undefined)[] {
  return list.split(',').map((r) => (r.trim() === 'none' ? undefined : Number(r)));
}

/**
 * Recall@k and latency of the dense index over a grid of query-time settings, against exact search
 * (`bypassVectorIndex`) with the same tenant prefilter. Each query is the adapter's dense query
 * (cosine, the tenant's rows only, the point columns and the distance, `limit` rows); recall counts
 * the exact top k found among the first k returned. The settings run query by query in a rotating
 * order, so load from elsewhere on a shared machine falls on all alike; the exact search's latency
 * is measured the same way, as one more column.
 */
export async function vectorGrid(
  table: Table,
  queries: readonly GridQuery[],
  settings: readonly GridSetting[],
  opts: { k: number; limit: number; rounds: number },
): Promise<{ rows: GridRow[]; exact: { p50: number; p99: number } }> {
  const exactIds = await Promise.all(
    queries.map(async (q) => {
      const rows: { id: string }[] = await table
        .vectorSearch(q.vector)
        .bypassVectorIndex()
        .column(DENSE_COLUMN)
        .distanceType('cosine')
        .where(q.where)
        .select(['id'])
        .limit(opts.k)
        .toArray();
      return rows.map((r) => r.id);
    }),
  );
  const run = (q: GridQuery, s: GridSetting | undefined) => {
    let query = table.vectorSearch(q.vector).column(DENSE_COLUMN).distanceType('cosine');
    // LanceDB refuses an ef below the rows it is asked for (limit × refine): raised to that, as Kilde does.
    query =
      s === undefined ? query.bypassVectorIndex() : query.ef(Math.max(s.ef, opts.limit * (s.refine ?? 1)));
    if (s?.refine !== undefined) query = query.refineFactor(s.refine);
    return query
      .where(q.where)
      .select([...POINT_COLUMNS, '_distance'])
      .limit(opts.limit)
      .toArray() as Promise<{ id: string }[]>;
  };
  const cells: (GridSetting | undefined)[] = [...settings, undefined];
  const lat = cells.map(() => [] as number[]);
  const found = cells.map(() => 0);
  let wanted = 0;
  for (const q of queries.slice(0, 5)) for (const s of cells) await run(q, s); // warm-up
  for (let round = 0; round < opts.rounds; round++) {
    for (const [n, q] of queries.entries()) {
      const exact = new Set(exactIds[n]);
      if (round === 0) wanted += exact.size;
      for (let j = 0; j < cells.length; j++) {
        const i = (j + n + round) % cells.length;
        const t0 = performance.now();
        const rows = await run(q, cells[i]);
        lat[i]!.push(performance.now() - t0);
        if (round === 0) found[i]! += rows.slice(0, opts.k).filter((r) => exact.has(r.id)).length;
      }
    }
  }
  const fig = (i: number) => {
    const l = lat[i]!.sort((a, b) => a - b);
    return { p50: percentile(l, 50), p99: percentile(l, 99) };
  };
  return {
    rows: settings.map((s, i) => ({ ...s, recall: found[i]! / wanted, ...fig(i) })),
    exact: fig(settings.length),
  };
}

/** The grid as a table: one row per setting, the exact search last. */
export function printGrid(result: Awaited<ReturnType<typeof vectorGrid>>, label: string): void {
  console.log(`${label}`);
  console.log('    ef  refine  recall@10   p50 ms   p99 ms');
  for (const r of result.rows) {
    console.log(
      `${String(r.ef).padStart(6)}  ${String(r.refine ?? 'none').padStart(6)}  ${r.recall.toFixed(3).padStart(9)}  ${r.p50.toFixed(2).padStart(7)}  ${r.p99.toFixed(2).padStart(7)}`,
    );
  }
  console.log(
    `exact   (bypassVectorIndex)  1.000  ${result.exact.p50.toFixed(2).padStart(7)}  ${result.exact.p99.toFixed(2).padStart(7)}`,
  );
}
