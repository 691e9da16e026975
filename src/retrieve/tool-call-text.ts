/**
 * The fallback parser of the agentic loop (the contract's "off-protocol tool calls"): a model that
 * answers in text instead of calling `retrieve` often still writes the call, as JSON or in Mistral's
 * own syntax. Tried in order: JSON, then `[TOOL_CALLS]`, then give up (the caller searches the
 * original query).
 */

export type TextCallFormat = 'json' | 'mistral';

export interface TextCall {
  format: TextCallFormat;
  /** Clean queries, at most `maxQueries`; empty means the model said no retrieval is needed. */
  queries: string[];
}

export interface ParseOptions {
  /** The tool's name: a call naming another tool is not a retrieval. */
  toolName: string;
  maxQueries: number;
  maxChars: number;
}

const MISTRAL_MARK = '[TOOL_CALLS]';

/** Queries written in `text`, or undefined when it holds no recognisable call. */
export function parseTextToolCall(text: string, o: ParseOptions): TextCall | undefined {
  const trimmed = text.trim();
  if (!trimmed.includes(MISTRAL_MARK)) {
    const json = firstJson(unfence(trimmed));
    const queries = json === undefined ? undefined : queriesOf(json.value, o);
    if (queries !== undefined) return { format: 'json', queries: clean(queries, o) };
  }
  const mistral = parseMistral(trimmed, o);
  if (mistral !== undefined) return { format: 'mistral', queries: clean(mistral, o) };
  return undefined;
}

function unfence(text: string): string {
  return text.replace(/^```[\w-]*\s*([\s\S]*?)\s*```$/, '$1');
}

function clean(queries: readonly string[], o: ParseOptions): string[] {
  const out: string[] = [];
  for (const q of queries) {
    const t = q.trim().slice(0, o.maxChars);
    if (t && !out.includes(t)) out.push(t);
    if (out.length === o.maxQueries) break;
  }
  return out;
}

/**
 * The tool's arguments in any of the shapes models write them: `{"queries": [...]}`, `{"query": "..."}`,
 * a bare list of strings, a call object (`{"name", "arguments"|"parameters"}` or OpenAI's
 * `{"function": {...}}`, arguments possibly a JSON string), a list of calls, or `{"tool_calls": [...]}`.
 * Undefined when none fits.
 */
function queriesOf(value: unknown, o: ParseOptions, depth = 0): string[] | undefined {
  if (depth > 8) return undefined;
  if (typeof value === 'string') {
    // Arguments sent as a JSON string inside the call object.
    const inner = depth > 0 ? firstJson(value) : undefined;
    return inner === undefined ? undefined : queriesOf(inner.value, o, depth + 1);
  }
  if (Array.isArray(value)) {
    if (value.every((v) => typeof v === 'string')) return value;
    const calls = value.map((v) => queriesOf(v, o, depth + 1));
    if (calls.some((c) => c === undefined)) return undefined;
    return calls.flatMap((c) => c ?? []);
  }
  if (value === null || typeof value !== 'object') return undefined;
  const obj = value as Record<string, unknown>;
  if (Array.isArray(obj.queries) && obj.queries.every((q) => typeof q === 'string')) return obj.queries;
  if (typeof obj.queries === 'string') return [obj.queries];
  if (typeof obj.query === 'string') return [obj.query];
  if (Array.isArray(obj.tool_calls)) return queriesOf(obj.tool_calls, o, depth + 1);
  if (obj.function !== undefined) return queriesOf(obj.function, o, depth + 1);
  if (typeof obj.name === 'string') {
    if (obj.name !== o.toolName) return undefined;
    const args = obj.arguments ?? obj.parameters ?? obj.args;
    return args === undefined ? [] : queriesOf(args, o, depth + 1);
  }
  return undefined;
}

/**
 * The first JSON value in `text`: the whole text, else a balanced `[...]` it starts with, else the
 * first balanced `{...}` that parses (a model that writes a sentence around its JSON). A list inside
 * prose is not taken: "see [1]" or "[]" in a sentence is no call.
 */
function firstJson(text: string): { value: unknown; end: number } | undefined {
  const whole = tryParse(text);
  if (whole !== undefined) return { value: whole.value, end: text.length };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '{' && !(c === '[' && i === 0)) continue;
    const end = balancedEnd(text, i);
    if (end === undefined) continue;
    const parsed = tryParse(text.slice(i, end));
    if (parsed !== undefined) return { value: parsed.value, end };
  }
  return undefined;
}

function tryParse(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/** Index just past the bracket that closes the one at `start` (strings and escapes respected). */
function balancedEnd(text: string, start: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}

/**
 * Mistral's raw tool-call syntax, as models served without a tool parser print it:
 * `[TOOL_CALLS][{"name": "retrieve", "arguments": {...}}]` (v3 tokenizers),
 * `[TOOL_CALLS]retrieve{...}` and `[TOOL_CALLS]retrieve[ARGS]{...}` (v11+), several calls in a row.
 */
function parseMistral(text: string, o: ParseOptions): string[] | undefined {
  const parts = text.split(MISTRAL_MARK).slice(1);
  if (parts.length === 0) return undefined;
  const queries: string[] = [];
  let recognised = false;
  for (const raw of parts) {
    const part = raw.trim();
    if (part.startsWith('[') || part.startsWith('{')) {
      const json = firstJson(part);
      const q = json === undefined ? undefined : queriesOf(json.value, o, 1);
      if (q === undefined) continue;
      recognised = true;
      queries.push(...q);
      continue;
    }
    const named = /^([A-Za-z_][\w.-]*)\s*(?:\[ARGS\])?\s*/.exec(part);
    if (!named || named[1] !== o.toolName) continue;
    const json = firstJson(part.slice(named[0].length));
    const q = json === undefined ? undefined : queriesOf(json.value, o, 1);
    if (q === undefined) continue;
    recognised = true;
    queries.push(...q);
  }
  return recognised ? queries : undefined;
}
