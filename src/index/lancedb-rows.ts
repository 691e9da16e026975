import { createRequire } from 'node:module';
import type * as ApacheArrow from 'apache-arrow';
import type {
  Table as ArrowTable,
  Field as FieldType,
  FixedSizeList as FixedSizeListType,
  Float32 as Float32Type,
  Int32 as Int32Type,
  Schema,
  Vector,
} from 'apache-arrow';
import { z } from 'zod';
import {
  DENSE_VECTOR,
  type IndexPoint,
  normaliseCosine,
  type SearchHit,
  type StoredPoint,
  withPageFields,
} from './contract.js';

/**
 * apache-arrow as LanceDB loads it: its CommonJS build. An `import` would load the ES build beside
 * it, a second copy of the library (≈75 ms of CPU at every start) whose classes are not LanceDB's.
 */
const arrow = createRequire(import.meta.url)('apache-arrow') as typeof ApacheArrow;
const { DataType, Field, FixedSizeList, Float32, Int32, List, makeData, makeVector, Utf8, vectorFromArray } =
  arrow;

/**
 * The LanceDB table layout: the filterable meta fields as real columns (so filters are SQL on typed
 * columns), the whole `meta` as JSON (so every other field round-trips untouched), and `text-dense`
 * only when the index has dense vectors.
 */
export const FILTER_COLUMNS = [
  'collection_name',
  'collection_type',
  'file_id',
  'ingest_version',
  'split_id',
  'languages',
] as const;
export const REQUIRED_COLUMNS = ['id', 'content', ...FILTER_COLUMNS, 'meta'] as const;
/**
 * The lexical side: a chunk's analysed terms (contextual header and text, stemmed in its document's
 * language), space-separated, under a whitespace full-text index. Tables made before it existed
 * lack it and keep a full-text index over `content` (`LexicalLayout` 'content').
 */
export const LEXICAL_COLUMN = 'lexical';
export type LexicalLayout = 'terms' | 'content';
/** What a read returns; the filter columns are never read back (meta is the source of truth). */
export const POINT_COLUMNS = ['id', 'content', 'meta'];
/** A point without its text (`ScrollOptions.metaOnly`). */
export const META_COLUMNS = ['id', 'meta'];

export function lanceSchema(denseDim: number | undefined, layout: LexicalLayout = 'terms'): Schema {
  const fields: FieldType[] = [
    new Field('id', new Utf8(), false),
    new Field('content', new Utf8(), false),
    new Field('collection_name', new Utf8(), false),
    new Field('collection_type', new Utf8(), true),
    new Field('file_id', new Utf8(), false),
    new Field('ingest_version', new Utf8(), true),
    new Field('split_id', new Int32(), false),
    new Field('languages', new List(new Field('item', new Utf8(), true)), true),
    new Field('meta', new Utf8(), false),
  ];
  if (layout === 'terms') fields.push(new Field(LEXICAL_COLUMN, new Utf8(), true));
  if (denseDim !== undefined) {
    fields.push(
      new Field(DENSE_COLUMN, new FixedSizeList(denseDim, new Field('item', new Float32(), true)), true),
    );
  }
  return new arrow.Schema(fields);
}

/**
 * The dense vector's column in a LanceDB table: the contract's `text-dense` without the hyphen.
 * LanceDB (0.37–0.39) fails every `optimize()` of a table whose dense index has grown in segments
 * over a column whose name needs quoting ("vector column `text-dense` not found in batch"), which
 * stops compaction and the index updates for good; collections still report `text-dense`
 * (docs/decisions-index.md). A table an earlier Kilde wrote is renamed when opened (`useDenseColumn`).
 */
export const DENSE_COLUMN = 'text_dense';
/** The column's name in tables written before 2026-11-23. */
export const LEGACY_DENSE_COLUMN = DENSE_VECTOR;

/**
 * Rows as an Arrow table of `schema`, column by column: what LanceDB's `makeArrowTable(rows,
 * {schema})` builds, without walking every value of every row to infer a schema already given (a
 * third of its cost) and with each dense vector copied into one Float32 buffer (element by element
 * through Arrow's builder otherwise). A field no row sets is null in every row.
 */
export function rowsToArrow(rows: readonly LanceRow[], schema: Schema): ArrowTable {
  const names = new Set(schema.fields.map((f) => f.name));
  for (const row of rows) {
    for (const key in row) if (!names.has(key)) throw new Error(`Found field not in schema: ${key}`);
  }
  const columns: Record<string, Vector> = {};
  for (const field of schema.fields) {
    const values = rows.map((r) => r[field.name] ?? null);
    columns[field.name] = DataType.isFixedSizeList(field.type)
      ? fixedSizeVector(values, field.type)
      : (directVector(values, field.type) ?? vectorFromArray(values, field.type));
  }
  return new arrow.Table(schema, columns);
}

/**
 * The string, 32-bit integer and list-of-string columns built straight into their Arrow buffers
 * (one UTF-8 buffer and its offsets a column): Arrow's `vectorFromArray` appends value by value
 * through a builder that encodes each string on its own, most of the cost of writing a pass of small
 * files' rows. Undefined for another type, or a value of another kind (Arrow's builder takes those).
 */
function directVector(
  values: ReadonlyArray<LanceRow[string]>,
  type: ApacheArrow.DataType,
): Vector | undefined {
  if (DataType.isUtf8(type)) {
    if (!values.every((v) => v === null || typeof v === 'string')) return undefined;
    return makeVector(utf8Data(values as ReadonlyArray<string | null>, type));
  }
  if (DataType.isInt(type) && type.bitWidth === 32 && type.isSigned) {
    if (!values.every((v) => v === null || (typeof v === 'number' && v === (v | 0)))) return undefined;
    const data = Int32Array.from(values, (v) => (v as number | null) ?? 0);
    return makeVector(
      makeData({ type: type as Int32Type, length: values.length, ...validity(values), data }),
    );
  }
  const item = DataType.isList(type) ? type.children[0]!.type : undefined;
  if (item && DataType.isUtf8(item)) {
    const lists = values as ReadonlyArray<unknown>;
    if (!lists.every((v) => v === null || (Array.isArray(v) && v.every((x) => typeof x === 'string')))) {
      return undefined;
    }
    const valueOffsets = new Int32Array(values.length + 1);
    const flat: string[] = [];
    values.forEach((v, i) => {
      if (v !== null) flat.push(...(v as string[]));
      valueOffsets[i + 1] = flat.length;
    });
    const child = utf8Data(flat, item);
    const list = type as ApacheArrow.List<ApacheArrow.Utf8>;
    return makeVector(
      makeData({ type: list, length: values.length, ...validity(values), valueOffsets, child }),
    );
  }
  return undefined;
}

/** One UTF-8 buffer and its offsets for `values` (null: no bytes, and a cleared validity bit). */
function utf8Data(values: ReadonlyArray<string | null>, type: ApacheArrow.Utf8) {
  const valueOffsets = new Int32Array(values.length + 1);
  let bytes = 0;
  values.forEach((v, i) => {
    if (v !== null) bytes += Buffer.byteLength(v, 'utf8');
    valueOffsets[i + 1] = bytes;
  });
  const data = Buffer.allocUnsafeSlow(bytes);
  values.forEach((v, i) => {
    if (v !== null) data.write(v, valueOffsets[i]!, 'utf8');
  });
  return makeData({ type, length: values.length, ...validity(values), valueOffsets, data });
}

/** The null count and, when there are nulls, the validity bitmap of a column's values. */
function validity(values: ReadonlyArray<unknown>): { nullCount: number; nullBitmap?: Uint8Array } {
  let nullCount = 0;
  for (const v of values) if (v === null) nullCount += 1;
  if (nullCount === 0) return { nullCount };
  const nullBitmap = new Uint8Array((values.length + 7) >> 3);
  values.forEach((v, i) => {
    if (v !== null) nullBitmap[i >> 3]! |= 1 << (i & 7);
  });
  return { nullCount, nullBitmap };
}

/** A fixed-size list column of floats (the dense vectors): one buffer, a validity bitmap for nulls. */
function fixedSizeVector(values: ReadonlyArray<LanceRow[string]>, type: FixedSizeListType): Vector {
  const size = type.listSize;
  const data = new Float32Array(values.length * size);
  const valid = new Uint8Array((values.length + 7) >> 3);
  let nulls = 0;
  values.forEach((v, i) => {
    if (v === null) {
      nulls += 1;
      return;
    }
    const vector = v as ArrayLike<number>;
    if (typeof v !== 'object' || vector.length !== size) {
      throw new Error(`a vector of ${size} numbers was expected`);
    }
    valid[i >> 3]! |= 1 << (i & 7);
    data.set(vector, i * size);
  });
  const child = makeData({ type: type.children[0]!.type as Float32Type, length: data.length, data });
  return makeVector(
    makeData({
      type,
      length: values.length,
      nullCount: nulls,
      ...(nulls > 0 ? { nullBitmap: valid } : {}),
      child,
    }),
  );
}

/** Size of `text-dense` in a table schema, or undefined when the table has none. */
export function denseSizeOf(schema: Schema): number | undefined {
  const field = schema.fields.find((f) => f.name === DENSE_COLUMN || f.name === LEGACY_DENSE_COLUMN);
  if (!field) return undefined;
  const type = field.type;
  // Type guards, not instanceof: LanceDB may hand back Arrow classes from its own copy of apache-arrow.
  if (!DataType.isFixedSizeList(type)) throw new Error(`column ${DENSE_VECTOR} is not a fixed-size vector`);
  return type.listSize;
}

export type LanceRow = Record<string, string | number | string[] | number[] | null>;

/** Which lexical layout a table has. */
export function lexicalLayoutOf(schema: Schema): LexicalLayout {
  return schema.fields.some((f) => f.name === LEXICAL_COLUMN) ? 'terms' : 'content';
}

/**
 * Terms of a text no one analysed: its lower-cased words. Points and queries from Kilde's pipelines
 * always carry their analysis (`IndexPoint.lexical`, `HybridQuery.terms`); this keeps anything else
 * searchable, unstemmed.
 */
export function plainTerms(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
}

/** A point as a table row; rejects what the index could not filter or score correctly later. */
export function pointToRow(
  point: IndexPoint,
  denseDim: number | undefined,
  layout: LexicalLayout = 'terms',
): LanceRow {
  const m = point.meta;
  if (typeof m.collection_name !== 'string')
    throw new Error(`point ${point.id}: meta.collection_name missing`);
  if (typeof m.file_id !== 'string') throw new Error(`point ${point.id}: meta.file_id missing`);
  if (!Number.isInteger(m.split_id)) throw new Error(`point ${point.id}: meta.split_id is not an integer`);
  const row: LanceRow = {
    id: point.id,
    content: point.content,
    collection_name: m.collection_name,
    collection_type: typeof m.collection_type === 'string' ? m.collection_type : null,
    file_id: m.file_id,
    ingest_version: typeof m.ingest_version === 'string' ? m.ingest_version : null,
    split_id: m.split_id,
    languages: Array.isArray(m.languages) ? m.languages.filter((l) => typeof l === 'string') : null,
    meta: JSON.stringify(m),
  };
  if (layout === 'terms') row[LEXICAL_COLUMN] = point.lexical ?? plainTerms(point.content).join(' ');
  if (denseDim === undefined) {
    if (point.dense !== undefined) {
      throw new Error(
        `point ${point.id} has a dense vector, but the index is lexical-only (no ${DENSE_VECTOR})`,
      );
    }
    return row;
  }
  if (point.dense !== undefined && point.dense.length !== denseDim) {
    throw new Error(
      `point ${point.id}: dense vector has ${point.dense.length} dimensions, the index expects ${denseDim}`,
    );
  }
  row[DENSE_COLUMN] = point.dense ?? null;
  return row;
}

const metaSchema = z.looseObject({
  collection_name: z.string(),
  collection_type: z.string(),
  file_id: z.string(),
  // Points written without a version (legacy data) read back as '' — "no version", as filters treat them.
  ingest_version: z.string().default(''),
  split_id: z.number(),
});

const rowSchema = z.object({ id: z.string(), content: z.string(), meta: z.string() });

/**
 * The columns of a row, each read once: LanceDB hands back Arrow row proxies whose every property
 * read decodes the value again, so a schema reading them (and copying the rest) costs a search
 * about twice what parsing a plain object does.
 */
function columns(raw: unknown, extra?: '_distance' | '_score'): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null) return {};
  const r = raw as Record<string, unknown>;
  const out: Record<string, unknown> = { id: r.id, content: r.content, meta: r.meta };
  if (extra) out[extra] = r[extra];
  return out;
}

function pointOf(row: Record<string, unknown>): StoredPoint {
  const { id, content, meta } = rowSchema.parse(row);
  return { id, content, meta: withPageFields(metaSchema.parse(JSON.parse(meta))) };
}

export function rowToPoint(raw: unknown): StoredPoint {
  return pointOf(columns(raw));
}

/** A row read with `META_COLUMNS` as a point whose content is ''. */
export function rowToMetaPoint(raw: unknown): StoredPoint {
  return pointOf({ ...columns(raw), content: '' });
}

const distanceSchema = z.object({ _distance: z.number() });
const scoreSchema = z.object({ _score: z.number() });

/** cos = 1 − cosine distance; dense scores are (cos + 1) / 2, clamped to [0, 1] (`normaliseCosine`). */
export function rowToDenseHit(raw: unknown): SearchHit {
  const row = columns(raw, '_distance');
  return { ...pointOf(row), score: normaliseCosine(1 - distanceSchema.parse(row)._distance) };
}

export function rowToLexicalHit(raw: unknown): SearchHit {
  const row = columns(raw, '_score');
  return { ...pointOf(row), score: scoreSchema.parse(row)._score };
}

/** Arrow values (vectors, lists) as plain arrays; everything else as it is. */
function plain(v: unknown): LanceRow[string] {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'object' && Symbol.iterator in v)
    return Array.from(v as Iterable<string | number>) as LanceRow[string];
  throw new Error(`unexpected LanceDB value of type ${typeof v}`);
}

/**
 * A whole row as read back (every column), moved to another tenant: the `collection_name` column
 * and the field in the `meta` JSON change together; vectors and terms are kept as they are.
 */
export function movedRow(raw: unknown, collectionName: string): LanceRow {
  if (!raw || typeof raw !== 'object') throw new Error('LanceDB returned a row that is not an object');
  const row: LanceRow = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k.startsWith('_')) continue;
    row[k] = plain(v);
  }
  const meta = JSON.parse(String(row.meta)) as Record<string, unknown>;
  meta.collection_name = collectionName;
  row.meta = JSON.stringify(meta);
  row.collection_name = collectionName;
  return row;
}
