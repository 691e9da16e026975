import { makeArrowTable } from '@lancedb/lancedb';
import { describe, expect, it } from 'vitest';
import { type IndexPoint, pointId } from '../../src/index/contract.js';
import {
  DENSE_COLUMN,
  type LanceRow,
  lanceSchema,
  pointToRow,
  rowsToArrow,
} from '../../src/index/lancedb-rows.js';
import { RESERVED_TENANTS } from '../../src/index/reserved.js';

const DIM = 8;

function chunk(file: string, split: number, dense?: number[], languages?: string[]): IndexPoint {
  return {
    id: pointId(file, 'v1', split),
    content: `Chunk ${split} of ${file}, with text ✓ and "quotes".`,
    meta: {
      collection_name: 'alpha',
      collection_type: 'file',
      file_id: file,
      ingest_version: 'v1',
      split_id: split,
      ...(languages ? { languages } : {}),
    },
    lexical: `chunk ${split} ${file}`,
    ...(dense ? { dense } : {}),
  };
}

/** A ledger entry: no content, no vector, no languages, in a reserved tenant. */
const ledger: IndexPoint = {
  id: pointId('f1', '\u0001committed\u0001alpha', 0),
  content: '',
  meta: {
    collection_name: RESERVED_TENANTS.committed,
    collection_type: 'kilde-ledger',
    file_id: 'f1',
    ingest_version: 'v1',
    split_id: 0,
  },
};

/** Every row's values as plain JSON (vectors and lists as arrays, nulls as null). */
const plainRows = (t: { toArray(): unknown[] }): unknown => JSON.parse(JSON.stringify(t.toArray()));

describe('rowsToArrow', () => {
  it("builds exactly the table LanceDB's makeArrowTable builds from the same rows and schema", () => {
    const points = [
      chunk('f1', 0, [1, 0, 0, 0, 0, 0, 0, 0.5], ['en']),
      ledger,
      chunk('f1', 1, undefined, ['da', 'en']),
      chunk('f2', 0, [0.25, -1, 0, 0, 3, 0, 0, 0]),
      chunk('f2', 1, undefined, []),
    ];
    for (const [dim, layout] of [
      [DIM, 'terms'],
      [undefined, 'terms'],
      [undefined, 'content'],
    ] as const) {
      const rows = points
        .filter((p) => dim !== undefined || p.dense === undefined)
        .map((p) => pointToRow(p, dim, layout));
      const schema = lanceSchema(dim, layout);
      const ours = rowsToArrow(rows, schema);
      const theirs = makeArrowTable(rows, { schema });
      expect(ours.schema.toString()).toBe(theirs.schema.toString());
      expect(ours.numRows).toBe(rows.length);
      expect(plainRows(ours)).toEqual(plainRows(theirs));
      for (const field of schema.fields) {
        expect(ours.getChild(field.name)?.nullCount).toBe(theirs.getChild(field.name)?.nullCount);
      }
    }
  });

  it('refuses a field the schema lacks and a vector of the wrong size', () => {
    const row = pointToRow(chunk('f1', 0, Array(DIM).fill(1)), DIM);
    const extra: LanceRow = { ...row, surprise: 'x' };
    expect(() => rowsToArrow([extra], lanceSchema(DIM))).toThrow(/not in schema: surprise/);
    const short: LanceRow = { ...row, [DENSE_COLUMN]: [1, 2, 3] };
    expect(() => rowsToArrow([short], lanceSchema(DIM))).toThrow(/vector of 8 numbers/);
  });
});
