import { z } from 'zod';
import type { Clock } from '../clock.js';
import { httpRequest } from '../net/http.js';
import { joinUrl } from '../net/join-url.js';

export interface RerankOptions {
  baseUrl: string;
  model: string;
  apiKey: string;
  timeoutMs: number;
  fetch?: typeof fetch;
  clock?: Clock;
}

export interface RerankScore {
  index: number;
  score: number;
}

/** Cohere/Jina `{results:[{index, relevance_score}]}` or TEI `[{index, score}]`. */
const cohereShape = z.object({
  results: z.array(z.object({ index: z.number().int(), relevance_score: z.number() })),
});
const teiShape = z.array(z.object({ index: z.number().int(), score: z.number() }));

/**
 * Cross-encoder rerank over HTTP: `POST {base}/v1/rerank {model, query, documents, top_n}`.
 * Throws on any failure; the pipeline decides to fall back to the unranked candidates.
 */
export function createReranker(o: RerankOptions) {
  const net = { ...(o.fetch ? { fetch: o.fetch } : {}), ...(o.clock ? { clock: o.clock } : {}) };
  const base = o.baseUrl.replace(/\/+$/, '');
  // Accept a base given with or without its /v1.
  const url = base.endsWith('/v1') ? joinUrl(base, 'rerank') : joinUrl(base, 'v1/rerank');
  return {
    url,
    async rerank(query: string, documents: readonly string[], topN: number): Promise<RerankScore[]> {
      const headers: Record<string, string> = {};
      if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;
      const res = await httpRequest(
        { url, headers, json: { model: o.model, query, documents, top_n: topN }, timeoutMs: o.timeoutMs },
        net,
      );
      if (!res.ok) throw new Error(`rerank endpoint answered HTTP ${res.status}`);
      const json: unknown = JSON.parse(res.text);
      const cohere = cohereShape.safeParse(json);
      const scores = cohere.success
        ? cohere.data.results.map((r) => ({ index: r.index, score: r.relevance_score }))
        : teiShape.parse(json);
      for (const s of scores) {
        if (s.index < 0 || s.index >= documents.length)
          throw new Error(`rerank index ${s.index} out of range`);
      }
      return scores.sort((a, b) => b.score - a.score);
    },
  };
}

export type Reranker = ReturnType<typeof createReranker>;
