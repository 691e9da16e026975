import { z } from 'zod';
import { kildeVersion } from '../version.js';
import type { KildeApp, PartContext, ServicePart } from './app.js';

/**
 * `GET /api/v1/info`: what this server offers, so a client (the web console) shows only the choices
 * it allows. Each mounted part contributes its piece (`ServicePart.info`): the retrieve part
 * `search`, the ingest part `ingest` (and `keep_versions` when it keeps versions).
 */
export const searchInfoSchema = z.object({
  modes_available: z.object({ hybrid: z.boolean(), rerank: z.boolean(), agentic: z.boolean() }),
  default_k: z.number().int(),
  max_k: z.number().int(),
});

export const ingestInfoSchema = z.object({
  max_upload_bytes: z.number().int(),
  /** `EXTRACTION_MAX_TEXT_CHARS`: a file under the byte limit can still extract to too much text. */
  max_text_chars: z.number().int(),
  engines: z.array(z.string()),
  /** Chunks get a dense vector (false: lexical-only, `EMBEDDING_PROVIDER=none`: no embed stage). */
  dense: z.boolean(),
  /** Chunks get BM25 sparse vectors (`ENABLE_SPARSE_EMBEDDINGS`). */
  sparse: z.boolean(),
});

export const infoSchema = z.object({
  version: z.string(),
  /** The parts mounted on this app (`retrieve`, `ingest`, `agent`, `tools`, ...). */
  services: z.array(z.string()),
  /** Present when a search part is mounted. */
  search: searchInfoSchema.optional(),
  /** Present when the ingest part is mounted. */
  ingest: ingestInfoSchema.optional(),
  /** Retired versions kept per file (0: none, the contract's behaviour). */
  keep_versions: z.number().int(),
});

export type InfoPiece = Partial<Pick<z.output<typeof infoSchema>, 'search' | 'ingest' | 'keep_versions'>>;

export function registerInfoRoute(app: KildeApp, ctx: PartContext, parts: readonly ServicePart[]): void {
  app.get(
    '/api/v1/info',
    // Nothing in it is a tenant's: per-tenant keys may read it too.
    { onRequest: ctx.scopedAuth, schema: { response: { 200: infoSchema } } },
    async () => {
      const pieces = await Promise.all(parts.map((p) => p.info?.() ?? {}));
      const merged: InfoPiece = Object.assign({}, ...pieces);
      return {
        version: kildeVersion(),
        services: parts.map((p) => p.name),
        ...merged,
        keep_versions: merged.keep_versions ?? 0,
      };
    },
  );
}
