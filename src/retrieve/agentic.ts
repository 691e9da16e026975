import type { LanguageModel } from 'ai';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { type LoopProgress, runAgentLoop } from './agent-loop.js';
import { QUERIES_PER_CALL, RETRIEVE_TOOL } from './agent-prompt.js';
import type { TracedHit } from './explain.js';
import { contentHash } from './fuse.js';
import type { AgentStop } from './metrics.js';
import { type PipelineDeps, type SearchMode, type SearchOptions, searchOne } from './pipeline.js';
import { type ChatTurn, resolveQueries } from './query-source.js';
import { parseTextToolCall } from './tool-call-text.js';

/** The agentic pipeline's settings (`ENABLE_AGENTIC_RAG` and the `AGENT_*` variables). */
export interface AgenticSettings {
  model: LanguageModel;
  strictTools: boolean;
  maxIterations: number;
  maxTokens: number;
  timeoutMs: number;
  includeRawQuery: boolean;
  historyMessages: number;
  previewK: number;
  previewChars: number;
  clock: Clock;
}

export interface AgenticRequest {
  queries?: readonly string[] | undefined;
  messages?: readonly ChatTurn[] | undefined;
  collection_names: string[];
  k: number;
  /** The request's filter, explanations and stage timer: every search of the run uses them. */
  search?: SearchOptions | undefined;
}

/** Where the agentic run searches: the request's mode, decided once, and whether there is anything to search. */
export interface AgenticTarget {
  pipeline: PipelineDeps;
  mode: SearchMode;
  /** False before anything was ingested: every search is empty, and none is sent. */
  exists: boolean;
}

export interface AgenticOutcome {
  /** The one merged list: deduplicated by content, best first, at most k. */
  hits: TracedHit[];
  /** Every query searched (seed, agent, fallback), in order. */
  queries: string[];
  stop: AgentStop;
  toolCalls: number;
  llmCalls: number;
}

/** One search whose full results were kept (the side channel). */
export interface Found {
  source: 'seed' | 'agent' | 'fallback';
  /** The agent's tool call it came from (1, 2, ...); the fallback counts as one more call. */
  call: number;
  query: string;
  hits: TracedHit[];
}

const QUERY_CHARS = 2000;

/**
 * `POST /search` with `ENABLE_AGENTIC_RAG=true` (the contract's state table, §3):
 *
 * 1. raw-query seed (`AGENT_INCLUDE_RAW_QUERY`): the original query searched as the linear pipeline
 *    would, concurrently with the agent;
 * 2. the agent (agent-loop.ts) writes 1–2 queries per iteration through the `retrieve` tool, which
 *    keeps the full results here and shows the model only previews;
 * 3. a model that answers in text instead gets the fallback parser (JSON, then Mistral's
 *    `[TOOL_CALLS]`, then the original query) and a direct search, rerank skipped; failures there
 *    yield nothing, never an error;
 * 4. merge: every kept result, deduplicated by content, best score first, limited to k.
 *
 * `AGENT_TIMEOUT` bounds the whole run on the injected clock: when it elapses, whatever is kept so
 * far is merged and answered, even while a search or an LLM call is still in flight.
 */
export async function agenticSearch(
  req: AgenticRequest,
  target: AgenticTarget,
  s: AgenticSettings,
  log: Logger,
): Promise<AgenticOutcome> {
  const { pipeline, mode } = target;
  const metrics = pipeline.metrics.agent;
  // The original query: what the linear pipeline searches without an LLM.
  const original = (
    await resolveQueries(req, { generate: false, lastMessages: 0, maxQueries: 0, log })
  ).queries.map((q) => q.slice(0, QUERY_CHARS));
  const messages = (req.messages ?? []).filter((m) => m.content.trim().length > 0);

  const found: Found[] = [];
  let calls = 0;
  const progress: LoopProgress = { toolCalls: 0, llmCalls: 0 };
  const deadline = new AbortController();
  let timedOut = false;
  const timer = s.clock.schedule(() => {
    timedOut = true;
    deadline.abort(new Error(`agent run exceeded AGENT_TIMEOUT (${s.timeoutMs / 1000} s)`));
  }, s.timeoutMs);
  const expired = new Promise<'timeout'>((resolve) =>
    deadline.signal.addEventListener('abort', () => resolve('timeout'), { once: true }),
  );

  const search = async (query: string, rerank: boolean, source: Found['source']): Promise<TracedHit[]> => {
    if (!target.exists) return [];
    const deps = rerank ? pipeline : { ...pipeline, reranker: undefined };
    const { hits } = await searchOne(deps, mode, query, req.collection_names, req.k, req.search);
    // Explaining: the path says the agentic run found it (its fallback search, when that one did).
    const path = source === 'fallback' ? 'fallback' : 'agentic';
    return hits.map((h) => (h.trace ? { ...h, trace: { ...h.trace, path } } : h));
  };
  // Results that arrive after the deadline are not taken: the answer has been merged already.
  const keep = (f: Found) => {
    if (!timedOut) found.push(f);
  };

  const seed = async () => {
    if (!s.includeRawQuery) return;
    await Promise.all(
      original.map(async (query) =>
        keep({ source: 'seed', call: 0, query, hits: await search(query, true, 'seed') }),
      ),
    );
  };

  const agent = async () => {
    const loop = await runAgentLoop(
      {
        messages: messages.slice(-s.historyMessages),
        queries: original,
        collections: req.collection_names,
        k: req.k,
        today: new Date(s.clock.now()).toISOString().slice(0, 10),
        maxIterations: s.maxIterations,
      },
      {
        model: s.model,
        strictTools: s.strictTools,
        maxIterations: s.maxIterations,
        maxTokens: s.maxTokens,
        previewK: s.previewK,
        previewChars: s.previewChars,
        signal: deadline.signal,
        retrieve: async (queries) => {
          const call = ++calls;
          const lists = await Promise.all(queries.map((q) => search(q, true, 'agent')));
          lists.forEach((hits, i) => {
            keep({ source: 'agent', call, query: queries[i]!, hits });
          });
          return lists;
        },
        metrics,
        log,
        progress,
      },
    );
    let stop: AgentStop =
      loop.stop === 'answered-in-text' ? 'text' : loop.stop === 'aborted' ? 'timeout' : loop.stop;
    const fallback = timedOut ? undefined : fallbackQueries(loop, original, s, log);
    if (fallback) {
      metrics.fallbackParse(fallback.result);
      if (fallback.queries.length === 0 && fallback.result !== 'original-query') stop = 'no-retrieval';
      // The seed already searched the original query (with rerank): nothing to add.
      const queries =
        fallback.result === 'original-query' && s.includeRawQuery
          ? []
          : fallback.queries.filter((q) => !found.some((f) => f.query === q));
      const call = ++calls;
      await Promise.all(
        queries.map(async (query) => {
          try {
            keep({ source: 'fallback', call, query, hits: await search(query, false, 'fallback') });
          } catch (err) {
            // The contract: failures inside the fallback yield empty results, not server errors.
            log.warn(
              { query, reason: err instanceof Error ? err.message : String(err) },
              'agent: fallback search failed; no results from it',
            );
          }
        }),
      );
    }
    return stop;
  };

  const work = Promise.all([seed(), agent()]);
  let outcome: Awaited<typeof work> | 'timeout';
  try {
    outcome = await Promise.race([work, expired]);
  } catch (err) {
    // The seed is the linear search of the original query: an index or embedder that fails it
    // fails the request as the linear pipeline would. The agent is stopped.
    deadline.abort(err);
    throw err;
  } finally {
    timer.cancel();
  }
  // Past the deadline the searches and the LLM call still running finish on their own; their
  // results are dropped and a failure among them is no one's to report.
  work.catch(() => undefined);
  const snapshot = [...found];
  const stop = outcome === 'timeout' ? 'timeout' : outcome[1];
  if (outcome === 'timeout') {
    log.info(
      { timeoutMs: s.timeoutMs, kept: snapshot.length },
      'agent: AGENT_TIMEOUT reached; answering what was found',
    );
  }
  metrics.run(stop, progress.toolCalls);
  return {
    hits: mergeFound(snapshot, req.k),
    queries: snapshot.map((f) => f.query),
    stop,
    toolCalls: progress.toolCalls,
    llmCalls: progress.llmCalls,
  };
}

/**
 * What the fallback parser makes of how the loop ended. A run that never searched (no call, only
 * invalid ones, or an LLM that failed) gets its text parsed, else the original query. After an
 * accepted run, text holding a call still counts (a model that switched to text mid-run), within
 * the iteration budget.
 */
function fallbackQueries(
  loop: { stop: string; toolCalls: number; searches: number; text?: string },
  original: readonly string[],
  s: AgenticSettings,
  log: Logger,
): { result: 'json' | 'mistral' | 'original-query'; queries: string[] } | undefined {
  // Nothing was searched for the agent (no call, only invalid or failed ones, an LLM that failed or
  // left no room in the token budget), and it did not say that nothing is needed.
  const neverSearched = loop.searches === 0 && loop.stop !== 'no-retrieval' && loop.stop !== 'aborted';
  if (!neverSearched && !(loop.stop === 'accepted' && loop.toolCalls < s.maxIterations)) return undefined;
  const parsed =
    loop.text === undefined
      ? undefined
      : parseTextToolCall(loop.text, {
          toolName: RETRIEVE_TOOL,
          maxQueries: QUERIES_PER_CALL,
          maxChars: QUERY_CHARS,
        });
  if (parsed) {
    log.debug({ format: parsed.format, queries: parsed.queries }, 'agent: queries parsed from a text answer');
    return { result: parsed.format, queries: parsed.queries };
  }
  if (!neverSearched) return undefined;
  log.debug(
    { queries: original },
    'agent: no tool call and no readable queries; searching the original query',
  );
  return { result: 'original-query', queries: [...original] };
}

/**
 * One list from everything kept. Which hits make the k places: the model's last search (the one it
 * accepted, or the newest when a budget stopped it) and the raw-query seed share them by rank, round
 * robin (the first hit of each of their lists, then the second ...), so neither crowds the other out;
 * searches the model rejected by searching again fill only what is left. Each content once (the
 * first occurrence). The list is then ordered best score first: every search of a run is on the same
 * path, so on the same scale.
 */
export function mergeFound(found: readonly Found[], k: number): TracedHit[] {
  const last = Math.max(0, ...found.map((f) => f.call));
  const accepted = found.filter((f) => f.source !== 'seed' && f.call === last);
  const seed = found.filter((f) => f.source === 'seed');
  const rejected = found
    .filter((f) => f.source !== 'seed' && f.call !== last)
    .sort((a, b) => b.call - a.call);
  const picked: TracedHit[] = [];
  const seen = new Set<string>();
  for (const tier of [[...accepted, ...seed], rejected]) {
    for (let rank = 0; picked.length < k && tier.some((f) => rank < f.hits.length); rank++) {
      for (const f of tier) {
        const hit = f.hits[rank];
        if (!hit || picked.length >= k) continue;
        const key = contentHash(hit.content);
        if (seen.has(key)) continue;
        seen.add(key);
        picked.push(hit);
      }
    }
  }
  // Array.prototype.sort is stable: equal scores keep the order they were picked in.
  return picked.sort((a, b) => b.score - a.score);
}
