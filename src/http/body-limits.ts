import type { JsonShapeLimits } from './json-shape.js';

/**
 * Largest request body each JSON route reads, in bytes. Each fits the most its schema can accept,
 * so no body can keep `JSON.parse` on the event loop longer than a valid request would; a larger
 * one is refused with 413 before it is parsed. Multipart routes stream to disk under their own
 * limits (`MAX_UPLOAD_BYTES`).
 */
export const BODY_LIMITS = {
  /** Any route without its own (the kernel's, and unknown routes). */
  default: 1024 * 1024,
  /** `POST /search`: up to 50 messages of 100,000 characters (≈ 5 MB of text, UTF-8). */
  search: 8 * 1024 * 1024,
  /** `PUT /api/v1/ingest` as JSON: bucket, key and identifiers only. */
  ingest: 64 * 1024,
  /** `POST /echo`: 10,000 characters, escaped at worst six bytes each. */
  echo: 128 * 1024,
  /** `POST /mcp`: one JSON-RPC message (tool arguments included). */
  mcp: 4 * 1024 * 1024,
  /**
   * `POST /api/v1/eval`: up to 10,000 queries of 2,000 characters and 500,000 judgements
   * (`EVAL_LIMITS`), at up to three UTF-8 bytes a character; BEIR's largest public sets fit many
   * times over.
   */
  eval: 96 * 1024 * 1024,
} as const;

/**
 * Largest structure of each JSON route's body (src/http/json-shape.ts), checked while it streams in
 * and before it is parsed: besides its bytes, a body's cost on the event loop (`JSON.parse`, then the
 * route's zod validation) grows with its keys and values, and a few MiB can hold 300,000 keys. Each
 * bound fits the most its route's schema can accept, with room for what clients add and a schema
 * ignores; a body over one is refused with 413 `INVALID_REQUEST` (`/mcp`: a JSON-RPC error). Set
 * with `bodyLimit` on each route as `config: { jsonShape: JSON_SHAPES.<route> }`.
 */
export const JSON_SHAPES = {
  /** Any route without its own: small bodies (`{collection_name}` of a restore, unknown routes). */
  default: { depth: 32, keys: 1000, items: 1000, values: 10_000 },
  /**
   * `POST /search`: 50 messages are kept (the last ones) of a conversation sent whole, each with up
   * to 100 text parts, up to 200 collections and a filter of up to 1,000 file ids.
   */
  search: { depth: 32, keys: 1000, rootKeys: 100, items: 10_000, values: 100_000 },
  /** `POST /retrieval` (Dify): a query, its settings and up to 50 metadata conditions. */
  dify: { depth: 16, keys: 1000, rootKeys: 100, items: 1000, values: 10_000 },
  /** `PUT /api/v1/ingest` and `POST /api/v1/jobs` as JSON: bucket, key and identifiers. */
  ingest: { depth: 16, keys: 1000, items: 1000, values: 5000 },
  /** `POST /echo`: `{text}`. */
  echo: { depth: 16, keys: 100, items: 100, values: 1000 },
  /**
   * `POST /mcp`: one JSON-RPC message: an initialize's capabilities, or a tool call's arguments
   * (`search_knowledge`: up to 200 collections and a filter of up to 1,000 file ids).
   */
  mcp: { depth: 32, keys: 1000, rootKeys: 100, items: 5000, values: 20_000 },
  /**
   * `POST /api/v1/eval`: 10,000 queries (5 keys and values each) and 500,000 judgements, at worst
   * each under a query id of its own (4 keys and values each); six fields at the top.
   */
  eval: { depth: 8, keys: 500_000, rootKeys: 100, items: 10_000, values: 2_100_000 },
} as const satisfies Record<string, JsonShapeLimits>;
