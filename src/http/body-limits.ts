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
