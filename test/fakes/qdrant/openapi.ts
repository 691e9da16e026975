import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { QDRANT_OPENAPI } from '../../fixtures/index.js';

/**
 * Validates Qdrant REST calls against Qdrant's published OpenAPI document
 * (`test/fixtures/contracts/qdrant-openapi-1.19.json`): the route (method + path template), query
 * parameters, the operation's request-body schema, and the 200 response schema.
 */
export const QDRANT_OPENAPI_PATH = QDRANT_OPENAPI;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const ROOT_ID = 'qdrant-openapi.json';

/**
 * OpenAPI 3.0 → JSON Schema for ajv: `nullable: true` becomes an explicit null alternative, and
 * local `$ref`s point into the registered components document.
 */
function toJsonSchema(node: Json): Json {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'nullable' || k === 'example') continue;
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/')) out[k] = ROOT_ID + v;
    // Property maps hold names, not schemas: keep names like `nullable` from being treated as keywords.
    else if (k === 'properties' && isObject(v)) {
      out[k] = Object.fromEntries(Object.entries(v).map(([n, s]) => [n, toJsonSchema(s)]));
    } else out[k] = toJsonSchema(v);
  }
  if (node.nullable !== true) return out;
  const keys = Object.keys(out).filter((k) => !['description', 'default', 'deprecated'].includes(k));
  if (keys.length === 0) return { type: 'null' };
  if (typeof out.type === 'string' && !('enum' in out)) return { ...out, type: [out.type, 'null'] };
  return { anyOf: [out, { type: 'null' }] };
}

const UINT_MAX: Record<string, number> = {
  uint8: 0xff,
  uint32: 0xffff_ffff,
  uint: Number.MAX_SAFE_INTEGER,
  uint64: Number.MAX_SAFE_INTEGER,
};

export interface Operation {
  operationId: string;
  method: string;
  template: string;
  pathParams: Record<string, string>;
}

interface CompiledOperation {
  operationId: string;
  method: string;
  template: string;
  regex: RegExp;
  paramNames: string[];
  query: Map<string, ValidateFunction>;
  requiredQuery: string[];
  body?: ValidateFunction;
  bodyRequired: boolean;
  response?: ValidateFunction;
}

export interface OpenApiValidator {
  /** Finds the operation for a method + path, or undefined for a route Qdrant does not have. */
  match(method: string, path: string): Operation | undefined;
  /** Errors (empty when valid) of the query string and JSON body of a request to `op`. */
  checkRequest(op: Operation, query: URLSearchParams, body: unknown, hasBody: boolean): string[];
  /** Errors (empty when valid) of a 200 response body of `op`. */
  checkResponse(op: Operation, body: unknown): string[];
}

function errorsOf(v: ValidateFunction, where: string): string[] {
  const all = (v.errors ?? []).map((e) => `${where}${e.instancePath} ${e.message ?? ''}`);
  return [...new Set(all)].slice(0, 8);
}

/** Query values arrive as text; coerce them the way Qdrant's router does before validating. */
function coerce(raw: string): unknown {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (/^-?\d+$/.test(raw)) return Number(raw);
  return raw;
}

export function loadOpenApiValidator(): OpenApiValidator {
  const doc = JSON.parse(readFileSync(QDRANT_OPENAPI_PATH, 'utf8')) as JsonObject;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);
  for (const [name, max] of Object.entries(UINT_MAX)) {
    ajv.addFormat(name, { type: 'number', validate: (n) => Number.isInteger(n) && n >= 0 && n <= max });
  }
  ajv.addFormat('int64', { type: 'number', validate: (n) => Number.isInteger(n) });
  ajv.addFormat('float', { type: 'number', validate: (n) => Number.isFinite(n) });
  ajv.addFormat('double', { type: 'number', validate: (n) => Number.isFinite(n) });
  ajv.addFormat('partial-date-time', { type: 'string', validate: () => true });
  ajv.addSchema({ $id: ROOT_ID, components: toJsonSchema(doc.components ?? {}) });

  const ops: CompiledOperation[] = [];
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [template, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    const paramNames = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '');
    const regex = new RegExp(`^${template.replace(/\{\w+\}/g, '([^/]+)')}$`);
    for (const [method, raw] of Object.entries(item)) {
      if (!isObject(raw)) continue;
      const op: CompiledOperation = {
        operationId: String(raw.operationId),
        method: method.toUpperCase(),
        template,
        regex,
        paramNames,
        query: new Map(),
        requiredQuery: [],
        bodyRequired: false,
      };
      for (const p of Array.isArray(raw.parameters) ? raw.parameters : []) {
        if (!isObject(p) || p.in !== 'query') continue;
        op.query.set(String(p.name), ajv.compile(toJsonSchema(p.schema ?? {}) as object));
        if (p.required === true) op.requiredQuery.push(String(p.name));
      }
      const rb = raw.requestBody;
      if (isObject(rb) && isObject(rb.content) && isObject(rb.content['application/json'])) {
        const schema = rb.content['application/json'].schema ?? {};
        op.body = ajv.compile(toJsonSchema(schema) as object);
        op.bodyRequired = rb.required === true;
      }
      const ok = isObject(raw.responses) ? raw.responses['200'] : undefined;
      if (isObject(ok) && isObject(ok.content) && isObject(ok.content['application/json'])) {
        op.response = ajv.compile(toJsonSchema(ok.content['application/json'].schema ?? {}) as object);
      }
      ops.push(op);
    }
  }
  const byId = new Map(ops.map((o) => [o.operationId, o]));

  return {
    match(method, path) {
      // Literal segments win over templated ones (`/collections/x/exists` vs `/collections/{name}`).
      const hits = ops
        .filter((o) => o.method === method.toUpperCase() && o.regex.test(path))
        .sort((a, b) => a.paramNames.length - b.paramNames.length);
      const o = hits[0];
      if (!o) return undefined;
      const m = o.regex.exec(path) ?? [];
      const pathParams = Object.fromEntries(
        o.paramNames.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? '')]),
      );
      return { operationId: o.operationId, method: o.method, template: o.template, pathParams };
    },
    checkRequest(op, query, body, hasBody) {
      const o = byId.get(op.operationId);
      if (!o) return [`unknown operation ${op.operationId}`];
      const errors: string[] = [];
      for (const [name, raw] of query) {
        const v = o.query.get(name);
        if (!v) errors.push(`query parameter "${name}" is not defined for ${o.operationId}`);
        else if (!v(coerce(raw))) errors.push(...errorsOf(v, `query.${name}`));
      }
      for (const name of o.requiredQuery) {
        if (!query.has(name)) errors.push(`query parameter "${name}" is required`);
      }
      if (o.body) {
        if (!hasBody && o.bodyRequired) errors.push(`${o.operationId} requires a JSON body`);
        if (hasBody && !o.body(body)) errors.push(...errorsOf(o.body, 'body'));
      } else if (hasBody) errors.push(`${o.operationId} takes no request body`);
      return errors;
    },
    checkResponse(op, body) {
      const v = byId.get(op.operationId)?.response;
      if (!v) return [];
      return v(body) ? [] : errorsOf(v, 'response');
    },
  };
}
