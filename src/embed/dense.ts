/** A dense embedding model behind one interface (http-compat, inference-server, inprocess). */
export interface DenseEmbedder {
  readonly provider: string;
  readonly model: string;
  readonly dim: number;
  /** Embeds chunks; applies EMBEDDING_PREFIX_DOC. One vector per input, in order; length === dim or it throws. */
  embedDocuments(texts: readonly string[], signal?: AbortSignal): Promise<number[][]>;
  /** Embeds one query; applies EMBEDDING_PREFIX_QUERY. */
  embedQuery(text: string, signal?: AbortSignal): Promise<number[]>;
  /** Readiness check of the backend. */
  probe?(signal: AbortSignal): Promise<void>;
  close?(): Promise<void>;
}
