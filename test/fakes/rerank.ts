import type { ServerResponse } from 'node:http';
import { type FakeServer, type RecordedRequest, sendJson, startRecordingServer } from './recording-server.js';

/**
 * A fake Cohere/Jina-style rerank server: `POST /v1/rerank {model, query, documents, top_n}` →
 * `{results: [{index, relevance_score}]}`. The score is the share of query words found in the
 * document, so a test can predict the order. `shape: 'tei'` answers TEI's `[{index, score}]`.
 */
export type RerankMode =
  /** `logits`: raw cross-encoder logits (8 × overlap − 4), as TEI answers with `raw_scores`. */
  | { kind: 'ok'; shape?: 'cohere' | 'tei'; logits?: boolean }
  | { kind: 'status'; status: number }
  | { kind: 'slow'; delayMs: number };

export interface FakeRerankServer extends FakeServer {
  mode: RerankMode;
}

export function overlapScore(query: string, doc: string): number {
  const words = (s: string) => new Set(s.toLowerCase().match(/\p{L}+/gu) ?? []);
  const q = words(query);
  const d = words(doc);
  if (q.size === 0) return 0;
  let n = 0;
  for (const w of q) if (d.has(w)) n++;
  return n / q.size;
}

export async function startFakeRerankServer(): Promise<FakeRerankServer> {
  const state: { mode: RerankMode } = { mode: { kind: 'ok' } };
  const handle = async (req: RecordedRequest, res: ServerResponse) => {
    if (req.method !== 'POST' || req.path !== '/v1/rerank')
      return sendJson(res, 404, { message: 'not found' });
    const mode = state.mode;
    if (mode.kind === 'status') return sendJson(res, mode.status, { message: 'rerank failed' });
    if (mode.kind === 'slow') await new Promise((r) => setTimeout(r, mode.delayMs));
    const body = req.json as { query: string; documents: string[]; top_n?: number };
    const scored = body.documents
      .map((d, index) => {
        const overlap = overlapScore(body.query, d);
        return { index, relevance_score: mode.kind === 'ok' && mode.logits ? 8 * overlap - 4 : overlap };
      })
      .sort((a, b) => b.relevance_score - a.relevance_score)
      .slice(0, body.top_n ?? body.documents.length);
    if (mode.kind === 'ok' && mode.shape === 'tei') {
      return sendJson(
        res,
        200,
        scored.map((s) => ({ index: s.index, score: s.relevance_score })),
      );
    }
    return sendJson(res, 200, {
      id: 'rerank-fake',
      results: scored,
      meta: { billed_units: { search_units: 1 } },
    });
  };
  const server = await startRecordingServer(handle);
  return {
    ...server,
    get mode() {
      return state.mode;
    },
    set mode(m: RerankMode) {
      state.mode = m;
    },
  };
}
