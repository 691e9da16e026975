import { z } from 'zod';
import { bool, int, oneOf, optionalString, string, url } from './fields.js';
import {
  dataPiece,
  embeddingPiece,
  embeddingRules,
  indexPiece,
  requireEmbeddingProvider,
  SPARSE_MODELS,
  sparsePiece,
} from './index-settings.js';
import { librechatPiece } from './librechat.js';
import { consolePiece, kernelPieces, llmPiece } from './shared.js';

export const retrievalPiece = {
  ENABLE_HYBRID_SEARCH: bool(
    false,
    'Dense + lexical fusion: server-side RRF when the collection has `text-sparse` (LanceDB: its full-text index), otherwise client-side BM25 fusion.',
  ),
  ENABLE_RERANKING: bool(
    false,
    'Rescore `k × INITIAL_RETRIEVAL_MULTIPLIER` candidates with `POST {RERANK_API_BASE_URL}/v1/rerank`.',
  ),
  ENABLE_QUERY_GENERATION: bool(
    true,
    'Generate search queries from chat `messages` with the LLM (linear pipeline).',
  ),
  ENABLE_AGENTIC_RAG: bool(
    false,
    '`POST /search` runs the agentic loop: `AGENT_MODEL` writes queries through a `retrieve` tool from the conversation, within hard budgets (`AGENT_MAX_ITERATIONS`, `AGENT_TIMEOUT`, `AGENT_MAX_TOKENS`); one merged list is answered. `false`: the linear pipeline.',
  ),
  SPARSE_QUERY_MODEL: oneOf(
    SPARSE_MODELS,
    'Qdrant/bm25',
    'BM25 query encoder; must match the ingestion side.',
  ),
  RERANK_API_BASE_URL: url(
    undefined,
    'Rerank endpoint base (Cohere/Jina `/v1/rerank`; TEI `/rerank` answers accepted too).',
  ),
  RERANK_MODEL: string('', 'Model name sent to the rerank endpoint.'),
  RERANK_API_KEY: string('', 'Key sent as `Authorization: Bearer` to the rerank endpoint; empty sends none.'),
  RERANK_TIMEOUT: int(10, 'Rerank time-out, seconds; on time-out the unranked candidates are returned.', {
    min: 1,
  }),
  INITIAL_RETRIEVAL_MULTIPLIER: int(3, 'Candidate multiplier when reranking.', { min: 1, max: 20 }),
  MERGE_QUERY_RESULTS: bool(
    true,
    "Fuse every query's hits into one list by RRF. Open WebUI reads only `documents[0]`, so without it the hits of its generated queries 2..n are lost; `false` answers one list per query (the contract's shape, for clients that read every list).",
  ),
  QUERY_GENERATION_MESSAGES: int(6, 'How many of the last chat messages the query generator sees.', {
    min: 1,
    max: 50,
  }),
  QUERY_GENERATION_MAX_QUERIES: int(3, 'Most queries the generator may return.', { min: 1, max: 10 }),
  QUERY_GENERATION_TIMEOUT: int(
    10,
    'Seconds the LLM may take to write the queries of a chat search; past it the search runs the last user message instead (a hung LLM never holds a search longer). At most `AGENT_TIMEOUT`.',
    { min: 1 },
  ),
  SMALL_COLLECTION_CHUNKS: int(
    100,
    'Collections searched together with at most this many chunks count as small (an attached file, ~40 pages at 400-token chunks): a query that finds nothing there gets their opening chunks, in reading order, score 0. 0 turns it off.',
    { min: 0, max: 10_000 },
  ),
  BM25_FUSION_MAX_DOCS: int(
    20000,
    'Client-side BM25 fusion: most chunks scrolled into memory per collection set.',
    {
      min: 1,
    },
  ),
  BM25_FUSION_CACHE_TTL: int(60, 'Client-side BM25 fusion: seconds a scrolled corpus is reused.', { min: 0 }),
  EVAL_RUNS_DIR: optionalString(
    'Directory of the evaluation runs `POST /api/v1/eval` and `kilde eval` store (one JSON file each). Unset: `$KILDE_DATA_DIR/eval-runs`.',
  ),
  AGENT_MAX_ITERATIONS: int(
    3,
    'Agentic loop: most `retrieve` tool calls of one run (invalid ones included); enforced in code, the run stops at the cap and answers what it found.',
    { min: 1, max: 20 },
  ),
  AGENT_MAX_TOKENS: int(
    20000,
    'Agentic loop: token budget of one run, prompt and completion tokens of every LLM call summed (as the endpoint reports them, else estimated at 4 characters a token); no call starts that would exceed it.',
    { min: 500 },
  ),
  AGENT_INCLUDE_RAW_QUERY: bool(
    true,
    'Agentic loop: raw-query seed, one deterministic search of the original query (the explicit `queries`, else the last user message) merged into the results.',
  ),
  AGENT_CONVERSATION_HISTORY_MESSAGES: int(
    4,
    'Agentic loop: how many of the last chat messages the agent sees.',
    { min: 1, max: 50 },
  ),
  AGENT_PREVIEW_K: int(5, 'Agentic loop: previews returned to the model per tool call.', {
    min: 1,
    max: 20,
  }),
  AGENT_TOOL_PREVIEW_CHARS: int(200, 'Agentic loop: characters per preview.', { min: 20, max: 2000 }),
};

/** What a search service needs: the LLM, the index, the embedders and the retrieval settings. */
export const searchPieces = {
  ...llmPiece,
  ...dataPiece,
  ...indexPiece,
  ...embeddingPiece,
  ...sparsePiece,
  ...retrievalPiece,
};
const searchSettingsSchema = z.object(searchPieces);
/** The settings of one search service, whichever service builds it (`retrieve`, `tools`, `all`). */
export type SearchSettings = z.output<typeof searchSettingsSchema>;

export const retrieveSchema = z
  .object({ ...kernelPieces, ...searchPieces, ...librechatPiece, ...consolePiece })
  .superRefine(requireEmbeddingProvider('retrieve'))
  .superRefine(embeddingRules);
export type RetrieveConfig = z.output<typeof retrieveSchema>;
