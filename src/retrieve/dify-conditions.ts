import { type ChunkMeta, toFilterInstant } from '../index/contract.js';
import { identifierProblem } from '../index/identifiers.js';
import type { Condition, MetadataCondition } from './dify-body.js';
import { difyInvalid as invalid } from './dify-errors.js';
import type { ExtraFilter } from './explain.js';

/** Dify's comparison operators (any other is a 400). */
const OPERATORS = [
  'contains',
  'not contains',
  'start with',
  'end with',
  'is',
  'is not',
  'in',
  'not in',
  'empty',
  'not empty',
  '=',
  '≠',
  '>',
  '<',
  '≥',
  '≤',
  'before',
  'after',
] as const;

/**
 * Dify's built-in metadata fields, as Kilde's chunk metadata holds them: the file's name, who
 * uploaded it, and its date (Kilde keeps one, the document's `created_at`). Any other name is
 * looked up as it is (`title`, `subject`, `authors`, `page_number`…, or a custom field).
 */
const FIELD_ALIASES: Record<string, string> = {
  document_name: 'name',
  uploader: 'user_id',
  upload_date: 'created_at',
  last_update_date: 'created_at',
  language: 'languages',
};

function text(c: Condition, field: string): string {
  if (typeof c.value !== 'string' || c.value.length === 0)
    throw invalid(`metadata_condition: ${field} "${c.comparison_operator}" needs a non-empty string value`);
  const problem = identifierProblem(c.value);
  if (problem) throw invalid(`metadata_condition: ${field} value ${problem}`);
  return c.value;
}

function list(c: Condition, field: string): string[] {
  const values = Array.isArray(c.value) ? c.value.map(String) : [text(c, field)];
  if (values.length === 0 || values.length > 1000)
    throw invalid(`metadata_condition: ${field} "${c.comparison_operator}" needs 1 to 1000 values`);
  for (const v of values) {
    const problem = identifierProblem(v);
    if (problem || v.length === 0)
      throw invalid(`metadata_condition: ${field} value ${problem ?? 'is empty'}`);
  }
  return [...new Set(values)];
}

/** A condition's date: ISO 8601, or a Unix timestamp in seconds (Dify's time fields). */
function instant(c: Condition, field: string): string {
  const raw =
    typeof c.value === 'number' || (typeof c.value === 'string' && /^\d{9,11}$/.test(c.value))
      ? new Date(Number(c.value) * 1000).toISOString()
      : c.value;
  const at = typeof raw === 'string' ? toFilterInstant(raw) : undefined;
  if (at === undefined)
    throw invalid(`metadata_condition: ${field} needs an ISO 8601 date or a Unix timestamp in seconds`);
  return at;
}

/** One condition as a field of Kilde's index filter, when the filter expresses it exactly. */
function pushdown(c: Condition, field: string): Partial<ExtraFilter> | undefined {
  const op = c.comparison_operator;
  const one = op === 'is' || op === '=' || op === 'in';
  switch (field) {
    case 'file_id':
      return one ? { fileIds: list(c, field) } : undefined;
    case 'collection_type':
      return one ? { collectionTypes: list(c, field) } : undefined;
    case 'languages': {
      if (!one && op !== 'contains') return undefined;
      const langs = list(c, field).map((l) => l.toLowerCase());
      if (!langs.every((l) => /^[a-z]{2,3}$/.test(l)))
        throw invalid('metadata_condition: languages are ISO 639 codes (two or three letters)');
      return { languages: langs };
    }
    case 'source':
      return op === 'start with' ? { sourcePrefix: text(c, field) } : undefined;
    case 'created_at':
      if (op === 'after' || op === '>') return { createdAfter: instant(c, field) };
      if (op === 'before' || op === '<') return { createdBefore: instant(c, field) };
      if (['≥', '≤', '=', '≠', 'is', 'is not'].includes(op)) instant(c, field);
      return undefined;
    default:
      return undefined;
  }
}

/** A metadata value as a list of strings (a missing field is an empty list). */
function valuesOf(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  return (Array.isArray(v) ? v : [v]).filter((x) => x !== null && x !== undefined).map(String);
}

const asNumber = (s: string) => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : undefined);

/** `a` against `b`: as numbers when both are, as instants when both are dates, else as text. */
function compare(a: string, b: string): number {
  const [x, y] = [asNumber(a), asNumber(b)];
  if (x !== undefined && y !== undefined) return x - y;
  const [s, t] = [Date.parse(a), Date.parse(b)];
  if (!Number.isNaN(s) && !Number.isNaN(t)) return s - t;
  return a.localeCompare(b);
}

const DATE_OPERATORS = new Set(['before', 'after', '>', '<', '≥', '≤', '=', '≠', 'is', 'is not']);

/** Whether one chunk's metadata satisfies one condition (Dify's operators; text matching ignores case). */
function holds(meta: ChunkMeta, field: string, c: Condition): boolean {
  const actual = valuesOf(meta[field]);
  const given = valuesOf(c.value);
  // A date compared as a date (Unix seconds too); `pushdown` has checked it is one before any search.
  const dated = field === 'created_at' && DATE_OPERATORS.has(c.comparison_operator) && given.length > 0;
  const target = dated ? [instant(c, field)] : given;
  const lower = (s: string) => s.toLowerCase();
  const any = (f: (a: string, b: string) => boolean) =>
    actual.some((a) => target.some((b) => f(lower(a), lower(b))));
  switch (c.comparison_operator) {
    case 'contains':
      return any((a, b) => a.includes(b));
    case 'not contains':
      return !any((a, b) => a.includes(b));
    case 'start with':
      return any((a, b) => a.startsWith(b));
    case 'end with':
      return any((a, b) => a.endsWith(b));
    case 'is':
    case 'in':
      return any((a, b) => a === b || compare(a, b) === 0);
    case 'is not':
    case 'not in':
      return !any((a, b) => a === b || compare(a, b) === 0);
    case 'empty':
      return actual.every((a) => a.trim() === '');
    case 'not empty':
      return actual.some((a) => a.trim() !== '');
    case '=':
      return any((a, b) => compare(a, b) === 0);
    case '≠':
      return !any((a, b) => compare(a, b) === 0);
    case '>':
    case 'after':
      return any((a, b) => compare(a, b) > 0);
    case '<':
    case 'before':
      return any((a, b) => compare(a, b) < 0);
    case '≥':
      return any((a, b) => compare(a, b) >= 0);
    case '≤':
      return any((a, b) => compare(a, b) <= 0);
    default:
      return false;
  }
}

/** One search of a Dify request: the index filter, and the conditions checked on each hit. */
export interface DifyQuery {
  filter: ExtraFilter;
  check: { field: string; condition: Condition }[];
}

/**
 * `metadata_condition` as the searches that answer it. `and`: one search, whose conditions the
 * index filter expresses go into it (`file_id`, `collection_type`, `language(s)`, `source` "start
 * with", `created_at` "after"/"before"), the others are checked on each hit. `or` (what Dify's
 * automatic filtering sends): one search per condition, the hits united. Dify's built-in field
 * names are mapped (`FIELD_ALIASES`), every operator of Dify's is understood; only an operator Dify
 * does not have, or a value that cannot be one (a date that is not a date, control characters), is
 * a 400.
 */
export function conditionsToQueries(mc: MetadataCondition): DifyQuery[] {
  const conditions = mc?.conditions ?? [];
  if (conditions.length === 0) return [{ filter: {}, check: [] }];
  const groups = mc?.logical_operator === 'or' ? conditions.map((c) => [c]) : [conditions];
  return groups.map((group) => {
    const filter: ExtraFilter = {};
    const check: DifyQuery['check'] = [];
    for (const c of group) {
      const names = Array.isArray(c.name) ? c.name : [c.name];
      if (names.length !== 1) throw invalid('metadata_condition: one field name per condition');
      const field = FIELD_ALIASES[names[0]!] ?? names[0]!;
      if (!(OPERATORS as readonly string[]).includes(c.comparison_operator))
        throw invalid(
          `metadata_condition: unknown comparison_operator ${JSON.stringify(c.comparison_operator)}`,
        );
      const part = pushdown(c, field);
      // A field the filter already holds (`file_id is a` and `file_id is b`) is checked on the hits.
      const key = part && (Object.keys(part)[0] as keyof ExtraFilter);
      if (part && key && filter[key] === undefined) Object.assign(filter, part);
      else check.push({ field, condition: c });
    }
    return { filter, check };
  });
}

/** Whether a hit's metadata satisfies every condition left to check. */
export function passes(meta: ChunkMeta, check: DifyQuery['check']): boolean {
  return check.every(({ field, condition }) => holds(meta, field, condition));
}
