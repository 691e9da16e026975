import { z } from 'zod';

/**
 * Environment field builders. Every field carries `EnvDoc` metadata so the configuration reference
 * (`docs/configuration.md`) is generated from the very schemas that parse `process.env`.
 */
export interface EnvDoc {
  type: string;
  default: string;
  doc: string;
  /** Set on a variable this build accepts but does not act on: why (what will read it). */
  inert?: string;
}

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

/** Unset and blank values both mean "use the default". */
const blank = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

declare module 'zod' {
  interface GlobalMeta {
    /** The variable's entry in docs/configuration.md. */
    env?: EnvDoc;
  }
}

function documented<T extends z.ZodType>(schema: T, meta: EnvDoc): T {
  return schema.meta({ env: meta });
}

export function envDoc(schema: z.core.$ZodType): EnvDoc | undefined {
  return z.globalRegistry.get(schema)?.env;
}

/**
 * Marks a variable this build parses (so a configuration written for a later release still starts)
 * but does not act on; docs/configuration.md says so, and test/config/inert.test.ts checks that
 * every other variable is read by the code.
 */
export function inert<T extends z.ZodType>(field: T, why: string): T {
  const doc = envDoc(field);
  if (!doc) throw new Error('inert() marks a documented field');
  return field.meta({ env: { ...doc, inert: why } });
}

/** `schema` documented as `like` is (for a field built from a builder and then refined). */
export function documentedAs<T extends z.ZodType>(schema: T, like: z.ZodType): T {
  const env = envDoc(like);
  return env ? documented(schema, env) : schema;
}

export function requiredString(doc: string) {
  return documented(blank().pipe(z.string({ error: 'is required' }).trim().min(1, 'is required')), {
    type: 'string',
    default: '(required)',
    doc,
  });
}

export function optionalString(doc: string) {
  return documented(blank().pipe(z.string().optional()), { type: 'string', default: '(unset)', doc });
}

/** A string whose default keeps meaningful whitespace (e.g. embedding prefixes like `passage: `). */
export function rawString(def: string, doc: string) {
  return documented(z.string().default(def), { type: 'string', default: JSON.stringify(def), doc });
}

export function string(def: string, doc: string) {
  return documented(blank().pipe(z.string().trim().default(def)), {
    type: 'string',
    default: def === '' ? '(empty)' : def,
    doc,
  });
}

export function url(def: string, doc: string): EnvField<string>;
export function url(def: undefined, doc: string): EnvField<string | undefined>;
export function url(def: string | undefined, doc: string): EnvField<string | undefined> {
  // Without a protocol constraint `localhost:4000/v1` parses (scheme `localhost:`) and only fails at
  // the first call; every URL variable names an HTTP endpoint.
  const base = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
  return documented(blank().pipe(def === undefined ? base.optional() : base.default(def)), {
    type: 'URL',
    default: def ?? '(unset)',
    doc,
  });
}

/** A Redis connection URL (`redis://` or `rediss://` for TLS), optional. */
export function redisUrl(doc: string): EnvField<string | undefined> {
  const base = z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' });
  return documented(blank().pipe(base.optional()), { type: 'URL', default: '(unset)', doc });
}

function parseBool(v: string, ctx: z.RefinementCtx): boolean {
  const s = v.trim().toLowerCase();
  if (TRUE.has(s)) return true;
  if (FALSE.has(s)) return false;
  ctx.addIssue({ code: 'custom', message: `must be one of true/false/1/0/yes/no, got "${v}"` });
  return z.NEVER;
}

/** A boolean whose default depends on other variables: unset stays `undefined`; `def` documents the rule. */
export function optionalBool(doc: string, def: string) {
  return documented(
    blank().pipe(
      z
        .string()
        .optional()
        .transform((v, ctx) => (v === undefined ? undefined : parseBool(v, ctx))),
    ),
    { type: 'boolean', default: def, doc },
  );
}

export function bool(def: boolean, doc: string) {
  return documented(
    blank().pipe(
      z
        .string()
        .optional()
        .transform((v, ctx) => (v === undefined ? def : parseBool(v, ctx))),
    ),
    { type: 'boolean', default: String(def), doc },
  );
}

type Bounds = { min?: number; max?: number };
type EnvField<T> = z.ZodType<T, string | undefined>;
export function int(def: number, doc: string, bounds?: Bounds): EnvField<number>;
export function int(def: undefined, doc: string, bounds?: Bounds): EnvField<number | undefined>;
export function int(def: number | undefined, doc: string, bounds: Bounds = {}): EnvField<number | undefined> {
  let n = z.coerce.number<string | undefined>({ error: 'must be an integer' }).int('must be an integer');
  if (bounds.min !== undefined) n = n.min(bounds.min, `must be >= ${bounds.min}`);
  if (bounds.max !== undefined) n = n.max(bounds.max, `must be <= ${bounds.max}`);
  return documented(blank().pipe(def === undefined ? n.optional() : n.default(def)), {
    type: 'integer',
    default: def === undefined ? '(unset)' : String(def),
    doc,
  });
}

export function number(def: number, doc: string, bounds: { min?: number } = {}) {
  let n = z.coerce.number<string | undefined>({ error: 'must be a number' });
  if (bounds.min !== undefined) n = n.min(bounds.min, `must be >= ${bounds.min}`);
  return documented(blank().pipe(n.default(def)), { type: 'number', default: String(def), doc });
}

export function oneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  def: T[number],
  doc: string,
) {
  return documented(blank().pipe(z.enum(values).default(def as never)), {
    type: values.map((v) => `\`${v}\``).join(' \\| '),
    default: def,
    doc,
  });
}

export function optionalOneOf<const T extends readonly [string, ...string[]]>(values: T, doc: string) {
  return documented(blank().pipe(z.enum(values).optional()), {
    type: values.map((v) => `\`${v}\``).join(' \\| '),
    default: '(unset)',
    doc,
  });
}

/** Like `optionalOneOf`, but any letter case is accepted (`Info`, `INFO`, `info`); the value is lower-cased. */
export function optionalCaselessOneOf<const T extends readonly [string, ...string[]]>(
  values: T,
  doc: string,
) {
  return documented(
    blank().pipe(
      z
        .string()
        .optional()
        .transform((v) => v?.trim().toLowerCase())
        .pipe(z.enum(values).optional()),
    ),
    { type: `${values.map((v) => `\`${v}\``).join(' \\| ')} (any case)`, default: '(unset)', doc },
  );
}

/** A JSON array of strings, e.g. `["tools:*","localhost:*"]`. The value must be JSON even when it is one entry. */
export function jsonStringArray(def: readonly string[] | undefined, doc: string) {
  const parsed = blank().pipe(
    z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return def === undefined ? undefined : [...def];
        let value: unknown;
        try {
          value = JSON.parse(v);
        } catch {
          ctx.addIssue({
            code: 'custom',
            message: `must be a JSON array of strings, e.g. ["a","b"]; got ${v}`,
          });
          return z.NEVER;
        }
        if (!Array.isArray(value) || !value.every((x) => typeof x === 'string')) {
          ctx.addIssue({
            code: 'custom',
            message: `must be a JSON array of strings, e.g. ["a","b"]; got ${v}`,
          });
          return z.NEVER;
        }
        return value as string[];
      }),
  );
  return documented(parsed, {
    type: 'JSON array of strings',
    default: def === undefined ? '(unset)' : JSON.stringify(def),
    doc,
  });
}

/** Comma-separated list (also accepts a JSON array). */
export function list(doc: string) {
  return documented(
    blank().pipe(
      z
        .string()
        .optional()
        .transform((v) => {
          if (v === undefined) return [] as string[];
          const t = v.trim();
          if (t.startsWith('[')) {
            try {
              const arr: unknown = JSON.parse(t);
              if (Array.isArray(arr)) return arr.map(String).filter((s) => s.length > 0);
            } catch {
              // fall through to comma splitting
            }
          }
          return t
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s.length > 0);
        }),
    ),
    { type: 'comma-separated list', default: '(empty)', doc },
  );
}
