import type { Logger } from 'pino';
import { z } from 'zod';
import type { Access } from '../http/access.js';
import { RpcCode, ToolError } from './json-rpc.js';

export interface ToolContext {
  /** Aborted when the client goes away or the server shuts down. */
  signal: AbortSignal;
  log: Logger;
  /** Sends `notifications/progress` when the caller asked for it (a no-op otherwise). */
  progress(message: string, progress: number, total?: number): Promise<void>;
  /** Who called (the bearer guard's verdict); undefined when `/mcp` has no bearer guard. */
  access?: Access | undefined;
}

/**
 * One MCP tool. Its parameter schema and documentation text are its public contract:
 * the first line of `doc` is the summary clients list, the rest tells the model when to call it.
 * `run` receives arguments already parsed by `input` (so the same bounds as the REST validator
 * apply) and returns the result as one JSON string (the portable result shape).
 */
export interface ToolDefinition<S extends z.ZodObject = z.ZodObject> {
  name: string;
  doc: string;
  /**
   * Who may call it when `/mcp` checks keys (`MCP_BEARER_AUTH=true`), as its REST twin's bearer
   * check: `main`, the main `API_KEY` only (`ctx.auth`: `GET /weather`, `POST /echo`); `scoped`, the
   * per-tenant keys too (`ctx.scopedAuth`: `POST /search`), the tool then narrowing its work to the
   * key's collections. Other callers neither see it in `tools/list` nor may call it.
   */
  callers: 'main' | 'scoped';
  input: S;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  run(args: z.output<S>, ctx: ToolContext): Promise<string>;
}

export function defineTool<S extends z.ZodObject>(tool: ToolDefinition<S>): ToolDefinition {
  return tool as unknown as ToolDefinition;
}

/**
 * Whether `access` may use `tool`. Undefined access is an `/mcp` without a bearer guard: nothing
 * was authenticated, every tool is open, as it is on such a server today.
 */
export function mayCall(tool: ToolDefinition, access: Access | undefined): boolean {
  return access === undefined || access.kind === 'main' || tool.callers === 'scoped';
}

/** Normalises a template-literal doc like Python's `inspect.cleandoc`: common indentation of the later lines goes. */
export function docText(doc: string): string {
  const [first = '', ...rest] = doc.trim().split('\n');
  const indents = rest.filter((l) => l.trim()).map((l) => /^\s*/.exec(l)![0].length);
  const cut = indents.length ? Math.min(...indents) : 0;
  return [first.trim(), ...rest.map((l) => l.slice(cut).trimEnd())].join('\n');
}

/** The `tools/list` entry: enum parameters stay JSON-schema enums; defaults are not required. */
export function listEntry(tool: ToolDefinition) {
  const { $schema: _drop, ...inputSchema } = z.toJSONSchema(tool.input, { io: 'input' }) as Record<
    string,
    unknown
  >;
  return {
    name: tool.name,
    description: docText(tool.doc),
    inputSchema: inputSchema as { type: 'object'; [k: string]: unknown },
    ...(tool.annotations ? { annotations: tool.annotations } : {}),
  };
}

/** Re-applies the tool's bounds to raw MCP arguments; failures are JSON-RPC invalid-params errors. */
export function parseArguments(tool: ToolDefinition, args: unknown) {
  const parsed = tool.input.safeParse(args ?? {});
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) =>
    i.path.length && !i.message.startsWith(String(i.path[0]))
      ? `${i.path.join('.')}: ${i.message}`
      : i.message,
  );
  throw new ToolError(RpcCode.InvalidParams, `Invalid arguments for ${tool.name}: ${problems.join('; ')}`);
}
