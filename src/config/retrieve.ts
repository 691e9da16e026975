import { z } from 'zod';
import { bool, inert, int, oneOf, string, url } from './fields.js';
import {
  dataPiece,
  embeddingPiece,
  embeddingRules,
  indexPiece,
  requireEmbeddingProvider,
  SPARSE_MODELS,
  sparsePiece,
} from './index-settings.js';
import { kernelPieces, llmPiece } from './shared.js';

const NO_AGENTIC_LOOP = 'the agentic retrieval loop is not in this build';

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
  ENABLE_AGENTIC_RAG: inert(
    bool(false, 'Route to the agentic loop; in this build a warning is logged and the linear pipeline runs.'),
    NO_AGENTIC_LOOP,
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
    false,
    "Fuse every query's hits into the first list by RRF (the chat platform reads only `documents[0]`).",
  ),
  QUERY_GENERATION_MESSAGES: int(6, 'How many of the last chat messages the query generator sees.', {
    min: 1,
    max: 50,
  }),
  QUERY_GENERATION_MAX_QUERIES: int(3, 'Most queries the generator may return.', { min: 1, max: 10 }),
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
  AGENT_MAX_ITERATIONS: inert(
    int(3, 'Agentic loop: logical iteration budget.', {
      min: 1,
    }),
    NO_AGENTIC_LOOP,
  ),
  AGENT_INCLUDE_RAW_QUERY: inert(bool(true, 'Agentic loop: raw-query seed retrieval.'), NO_AGENTIC_LOOP),
  AGENT_PREVIEW_K: inert(
    int(5, 'Agentic loop: previews returned to the model per tool call.', { min: 1 }),
    NO_AGENTIC_LOOP,
  ),
  AGENT_TOOL_PREVIEW_CHARS: inert(
    int(200, 'Agentic loop: characters per preview.', { min: 20 }),
    NO_AGENTIC_LOOP,
  ),
};

export const retrieveSchema = z
  .object({
    ...kernelPieces,
    ...llmPiece,
    ...dataPiece,
    ...indexPiece,
    ...embeddingPiece,
    ...sparsePiece,
    ...retrievalPiece,
  })
  .superRefine(requireEmbeddingProvider('retrieve'))
  .superRefine(embeddingRules);
export type RetrieveConfig = z.output<typeof retrieveSchema>;
