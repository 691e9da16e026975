/**
 * What one dense provider (http-compat, inference-server, inprocess) implements. It embeds texts that
 * already carry their prefix and already fit the token budget; prefixes, windows of long inputs,
 * batching and the vector-size check live once, in `budgeted-embedder.ts`.
 */
export interface EmbeddingBackend {
  /** One vector per text, in order. Throws `InputTooLongError` when the model refuses one text's length. */
  embedBatch(texts: string[], signal?: AbortSignal): Promise<number[][]>;
  /** One cheap request without retries, returning the vector of a short text (so its size can be checked). */
  probe(signal: AbortSignal): Promise<number[]>;
  close?(): Promise<void>;
}

/**
 * The backend's model refused `texts[index]` as too long (TEI 413/422, or the in-process tokenizer
 * counting more tokens than the model takes). The caller splits that text and retries, so a
 * tokenizer that counts differently from the model's still never loses an input.
 */
export class InputTooLongError extends Error {
  override readonly name = 'InputTooLongError';
  constructor(
    readonly index: number,
    message: string,
  ) {
    super(message);
  }
}
