/**
 * Qdrant payload-filter semantics for the fake: `must` (all), `should` (at least one),
 * `must_not` (none), nested filters, and field conditions with `match.value` / `match.any` /
 * `match.except`. A key path walks objects by dots; when a value is an array, a condition holds if
 * any element matches (Qdrant's array semantics). A missing field matches no `match` condition, so
 * `must_not` keeps points that lack the field. Anything else is reported as unsupported so tests fail
 * instead of silently matching.
 */
export class UnsupportedFilter extends Error {}

type Payload = Record<string, unknown>;

function lookup(payload: Payload, key: string): unknown[] {
  let values: unknown[] = [payload];
  for (const part of key.split('.')) {
    const next: unknown[] = [];
    for (const v of values) {
      if (v && typeof v === 'object' && !Array.isArray(v) && part in v) {
        const child = (v as Record<string, unknown>)[part];
        if (Array.isArray(child)) next.push(...child);
        else if (child !== undefined && child !== null) next.push(child);
      }
    }
    values = next;
  }
  return values;
}

function asList(x: unknown): unknown[] {
  if (x === undefined || x === null) return [];
  return Array.isArray(x) ? x : [x];
}

function record(x: unknown): Record<string, unknown> {
  if (!x || typeof x !== 'object' || Array.isArray(x)) throw new UnsupportedFilter('not an object');
  return x as Record<string, unknown>;
}

function fieldMatches(cond: Record<string, unknown>, payload: Payload): boolean {
  const key = String(cond.key);
  const match = cond.match === undefined || cond.match === null ? undefined : record(cond.match);
  const range = cond.range === undefined || cond.range === null ? undefined : record(cond.range);
  const other = Object.keys(cond).filter(
    (k) => k !== 'key' && k !== 'match' && k !== 'range' && cond[k] != null,
  );
  if ((!match && !range) || (match && range) || other.length > 0) {
    throw new UnsupportedFilter(`field condition on ${key} with ${other.join(', ') || 'no match'}`);
  }
  const values = lookup(payload, key);
  if (range) return values.some((v) => inRange(range, v));
  if (!match) return false;
  if ('value' in match) return values.some((v) => v === match.value);
  if ('any' in match) {
    const any = asList(match.any);
    return values.some((v) => any.includes(v));
  }
  if ('except' in match) {
    const except = asList(match.except);
    return values.some((v) => !except.includes(v));
  }
  throw new UnsupportedFilter(`match kind ${Object.keys(match).join(', ')}`);
}

/**
 * Qdrant's `range`: numbers against numeric bounds (`Range`), or RFC 3339 strings against datetime
 * bounds (`DatetimeRange`: both sides parsed as instants; a value that is no date never matches).
 */
function inRange(range: Record<string, unknown>, value: unknown): boolean {
  const bounds = Object.entries(range).filter(([, b]) => b !== undefined && b !== null);
  const datetime = bounds.some(([, b]) => typeof b === 'string');
  const asNumber = (x: unknown): number | undefined => {
    if (datetime) {
      if (typeof x !== 'string') return undefined;
      const t = Date.parse(x);
      return Number.isNaN(t) ? undefined : t;
    }
    return typeof x === 'number' ? x : undefined;
  };
  const v = asNumber(value);
  if (v === undefined) return false;
  return bounds.every(([op, b]) => {
    const bound = asNumber(b);
    if (bound === undefined) throw new UnsupportedFilter(`range bound ${op}: ${String(b)}`);
    if (op === 'gt') return v > bound;
    if (op === 'gte') return v >= bound;
    if (op === 'lt') return v < bound;
    if (op === 'lte') return v <= bound;
    throw new UnsupportedFilter(`range operator ${op}`);
  });
}

function conditionMatches(cond: unknown, payload: Payload): boolean {
  const c = record(cond);
  if ('key' in c) return fieldMatches(c, payload);
  if ('must' in c || 'should' in c || 'must_not' in c) return filterMatches(c, payload);
  throw new UnsupportedFilter(`condition ${Object.keys(c).join(', ')}`);
}

/** Whether the point's payload satisfies the filter (undefined/null filter: everything). */
export function filterMatches(filter: unknown, payload: Payload): boolean {
  if (filter === undefined || filter === null) return true;
  const f = record(filter);
  if (f.min_should != null) throw new UnsupportedFilter('min_should');
  const must = asList(f.must);
  const should = asList(f.should);
  const mustNot = asList(f.must_not);
  if (!must.every((c) => conditionMatches(c, payload))) return false;
  if (should.length > 0 && !should.some((c) => conditionMatches(c, payload))) return false;
  return !mustNot.some((c) => conditionMatches(c, payload));
}
