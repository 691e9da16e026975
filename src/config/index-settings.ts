import { homedir } from 'node:os';
import { join } from 'node:path';
import type { z } from 'zod';
import {
  bool,
  documentedAs,
  inert,
  int,
  oneOf,
  optionalOneOf,
  optionalString,
  rawString,
  string,
  url,
} from './fields.js';

/** `~` and `~/…` are the user's home directory: one data directory, whichever folder Kilde runs in. */
export function expandHome(path: string): string {
  if (path === '~') return homedir();
  return path.startsWith('~/') ? join(homedir(), path.slice(2)) : path;
}

export const DEFAULT_DATA_DIR = '~/.kilde';

/**
 * Settings ingestion and retrieval must agree on; a mismatch raises no error, it gives wrong scores or
 * empty hits (docs/architecture.md, "The shared index contract").
 */
export const dataPiece = {
  KILDE_DATA_DIR: documentedAs(
    string(DEFAULT_DATA_DIR, '').transform(expandHome),
    string(
      DEFAULT_DATA_DIR,
      "Data directory of the embedded mode (LanceDB index, generated key): the same for the server and the CLI from any folder. `~` is the user's home.",
    ),
  ),
};

/**
 * Why a `VECTORDB_URI` value is refused: one that looks like `host:port` or a URL of another scheme
 * would otherwise silently become a LanceDB folder of that name.
 */
export function vectordbUriProblem(uri: string): string | undefined {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(uri)?.[1]?.toLowerCase();
  if (scheme !== undefined) {
    if (['http', 'https', 'file'].includes(scheme)) return undefined;
    return `has the unsupported scheme "${scheme}://": use http://host:6333 for Qdrant (its REST port), or a directory path for the embedded LanceDB index`;
  }
  if (/^[A-Za-z0-9.-]+:\d+(\/.*)?$/.test(uri)) {
    return `"${uri}" looks like host:port: write http://${uri} for Qdrant (or ./${uri} for a LanceDB directory of that name)`;
  }
  return undefined;
}

export const indexPiece = {
  VECTORDB_URI: documentedAs(
    optionalString('').superRefine((v, ctx) => {
      const problem = v === undefined ? undefined : vectordbUriProblem(v.trim());
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    optionalString(
      "`http(s)://…` selects Qdrant; a path or `file://` URI selects embedded LanceDB there (a `host:port` or another scheme is refused). Unset: `$KILDE_DATA_DIR/lancedb`. Must equal the other service's value.",
    ),
  ),
  VECTORDB_API_KEY: optionalString('Qdrant API key (sent as `api-key`).'),
  VECTORDB_INDEX: string(
    'ingestion_files',
    'Physical collection (Qdrant) / table (LanceDB); must match between services.',
  ),
  VECTORDB_TIMEOUT: int(30, 'Time-out of one index call, seconds.', { min: 1 }),
  QDRANT_SHARD_NUMBER: int(
    undefined,
    "Qdrant only: shards of the collection when Kilde creates it. Unset: Qdrant's default (1 on a single node, the number of nodes in a cluster). An existing collection is left as it is (a difference is logged).",
    { min: 1 },
  ),
  QDRANT_REPLICATION_FACTOR: int(
    undefined,
    "Qdrant only: copies of each shard when Kilde creates the collection (unset: Qdrant's default, 1). 2 or more keeps the index available when a node fails.",
    { min: 1 },
  ),
  QDRANT_WRITE_CONSISTENCY_FACTOR: int(
    undefined,
    "Qdrant only: replicas that must apply a write before it is acknowledged, set at creation (unset: Qdrant's default, 1). A majority of QDRANT_REPLICATION_FACTOR (2 of 3) with QDRANT_READ_CONSISTENCY=quorum keeps ingests and searches working with a node down; equal to it, an acknowledged ingest is on every replica but every ingest fails while one is down (docs/scaling.md).",
    { min: 1 },
  ),
  QDRANT_WRITE_ORDERING: optionalOneOf(
    ['weak', 'medium', 'strong'],
    "Qdrant only: `ordering` of every write (all writes also `wait` until applied). Unset: not sent (Qdrant's `weak`). `medium` and `strong` route writes through a leader, so a re-ingest's writes and deletes apply in the order Kilde sent them on every replica; `strong`'s leader is permanent, so no write succeeds while its node is down: `medium` is recommended with replication (docs/scaling.md).",
  ),
  QDRANT_READ_CONSISTENCY: documentedAs(
    optionalString('').superRefine((v, ctx) => {
      if (v !== undefined && !/^(majority|quorum|all|[1-9][0-9]*)$/.test(v.trim()))
        ctx.addIssue({
          code: 'custom',
          message: 'must be majority, quorum, all or a positive number of replicas',
        });
    }),
    optionalString(
      "Qdrant only: `consistency` of every read (search, count, scroll): `majority`, `quorum`, `all` or a number of replicas. Unset: not sent (Qdrant's default, one replica). With a write consistency factor below the replication factor, `quorum` (a majority of the replicas) gives read-your-writes and keeps working with a node down; `majority` and `all` ask every replica and fail while one is down (Qdrant 1.18.3; docs/scaling.md).",
    ),
  ),
  LANCEDB_VECTOR_INDEX_MIN_ROWS: int(
    5_000,
    'LanceDB only: rows from which the writer builds a dense vector index in the background: an exact one (IVF-Flat, one partition: every vector held in memory, rows × dimensions × 4 bytes, same results as a scan at a fraction of its cost) up to `LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS`, an approximate one past it. Below it dense search is an exact scan of the data files. 0 never builds one (docs/performance.md, "Search").',
    { min: 0 },
  ),
  LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS: int(
    200_000,
    'LanceDB only: rows from which the dense vector index is approximate: an HNSW graph over 8-bit quantized vectors (trained again each time the table has grown 4×) replaces the exact index. At or below `LANCEDB_VECTOR_INDEX_MIN_ROWS` the first index built is already the approximate one.',
    { min: 0 },
  ),
  LANCEDB_VECTOR_INDEX_EF: int(
    400,
    'LanceDB only: candidates kept while searching the HNSW graph of the approximate dense index (Qdrant: `hnsw_ef`); raised to k × the refine factor when that is larger. Higher: better recall, slower.',
    { min: 1 },
  ),
  LANCEDB_VECTOR_INDEX_REFINE: int(
    2,
    'LanceDB only: refine factor of the approximate dense index: k × this many candidates of the graph search are re-ranked by their full vectors (Qdrant: `quantization.rescore` with `oversampling`). 0: none, the 8-bit distances decide. Not applied to the exact index.',
    { min: 0 },
  ),
  LANCEDB_INDEX_CACHE_MB: int(
    undefined,
    "LanceDB only: most memory (MiB) the process's LanceDB session keeps of index data (the dense vector index, the full-text and scalar indexes) for reuse across queries; the least recently used goes past it. Every optimize writes new index files and nothing reads the old ones again, so without a bound they pile up (LanceDB's own default is 6 GiB). Unset: 512 with dense embeddings, 256 without. The dense index must fit, with room for the full-text index: the exact one takes rows × dimensions × 4 bytes (200,000 chunks of 1,024 dimensions, its largest at the default `LANCEDB_VECTOR_INDEX_ANN_MIN_ROWS`: 781 MiB), the approximate one about rows × (dimensions + 160) bytes; the writer warns when one it built takes more than three quarters of this. Under steady ingestion the caches fill up to their bounds, so RSS levels off about this much above the server's own. One budget for every table the process opens (docs/operations.md, \"LanceDB's caches\").",
    { min: 1 },
  ),
  LANCEDB_METADATA_CACHE_MB: int(
    64,
    "LanceDB only: most memory (MiB) the process's LanceDB session keeps of table metadata (manifests, data and deletion file footers). Every commit adds a table version whose metadata LanceDB caches, so a server that ingests steadily grew with every commit up to LanceDB's own default of 1 GiB; past this bound the least recently used goes (docs/performance.md, \"LanceDB's caches\").",
    { min: 1 },
  ),
};

export const EMBEDDING_PROVIDERS = ['http-compat', 'inference-server', 'inprocess', 'none'] as const;

export const embeddingPiece = {
  EMBEDDING_PROVIDER: optionalOneOf(
    EMBEDDING_PROVIDERS,
    'Dense embedding backend: `http-compat` (OpenAI `/embeddings`), `inference-server` (TEI `/embed`), `inprocess` (transformers.js), or `none` for lexical-only (BM25) mode. Required by `ingest`/`retrieve`; `all` defaults to `none`.',
  ),
  EMBEDDING_MODEL: string(
    '',
    'Dense model id (or local directory for `inprocess`); must match between services.',
  ),
  EMBEDDING_API_BASE_URL: url(
    undefined,
    'Base URL of the embedding endpoint (e.g. `http://tei:80` or `http://proxy/v1`).',
  ),
  EMBEDDING_API_KEY: string(
    '',
    'Key sent as `Authorization: Bearer` to the embedding endpoint; empty sends none.',
  ),
  EMBEDDING_DIM: int(undefined, 'Dense vector size; required unless `EMBEDDING_PROVIDER=none`.', { min: 1 }),
  EMBEDDING_PREFIX_DOC: rawString(
    'passage: ',
    'Prepended to each chunk before embedding (trailing space kept).',
  ),
  EMBEDDING_PREFIX_QUERY: rawString(
    'query: ',
    'Prepended to each query before embedding (trailing space kept).',
  ),
  EMBEDDING_ENCODING_FORMAT: oneOf(
    ['base64', 'float'],
    'base64',
    '`http-compat` only: the `encoding_format` asked of the endpoint. `base64` (what the official OpenAI SDK sends) carries each vector as its little-endian float32 bytes, a quarter of the JSON and no number parsing; `float` asks for JSON numbers, for an endpoint that refuses `base64`. Either shape is read in the answer.',
  ),
  EMBEDDING_BATCH_SIZE: int(32, 'Texts per embedding request.', { min: 1 }),
  EMBEDDING_TIMEOUT: int(60, 'Time-out of one embedding request, seconds.', { min: 1 }),
  EMBEDDING_MAX_RETRIES: int(
    3,
    'Retries of a failed embedding request (429/5xx/network), with backoff honouring `Retry-After`.',
    {
      min: 0,
    },
  ),
  EMBEDDING_MAX_TOKENS: int(
    512,
    "The model's input token budget (prefix included); longer inputs are split, never dropped.",
    {
      min: 8,
    },
  ),
  EMBEDDING_OFFLINE: bool(
    true,
    '`inprocess` only: never download models; load from a local directory or cache.',
  ),
};

export const SPARSE_MODELS = ['Qdrant/bm25'] as const;
export const SPARSE_LANGUAGES = ['english', 'danish'] as const;

export const sparsePiece = {
  SPARSE_LANGUAGE: oneOf(
    SPARSE_LANGUAGES,
    'english',
    'Fallback language of the lexical (BM25) side. Each document is analysed in its detected language when Kilde can stem it (English, Danish), else in this one; a query in the languages of the collections it searches. Changing it applies to documents ingested afterwards (logged at start-up; docs/quality.md).',
  ),
};

export const tokenizerPiece = {
  TOKENIZER_MODEL: optionalString(
    'Tokenizer used to measure chunks: a local `tokenizer.json` path or directory (falls back to `EMBEDDING_MODEL`).',
  ),
  TOKENIZER_REVISION: inert(
    string('', 'Hub revision of the tokenizer; empty means the latest.'),
    'the tokenizer is read from local files only, so there is no Hub revision to pin',
  ),
};

/**
 * Cross-field rules of the dense embedder, checked when the configuration is parsed (exit 2, one
 * line naming the variable) rather than when the embedder is built.
 */
export function embeddingRules(
  c: {
    EMBEDDING_PROVIDER?: string | undefined;
    EMBEDDING_DIM?: number | undefined;
    EMBEDDING_API_BASE_URL?: string | undefined;
    EMBEDDING_MODEL?: string | undefined;
  },
  ctx: z.RefinementCtx,
) {
  const provider = c.EMBEDDING_PROVIDER;
  if (provider === undefined || provider === 'none') return;
  const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
  if (c.EMBEDDING_DIM === undefined)
    issue('EMBEDDING_DIM', `is required with EMBEDDING_PROVIDER=${provider} (the model's vector size)`);
  if (provider !== 'inprocess' && c.EMBEDDING_API_BASE_URL === undefined) {
    const example = provider === 'http-compat' ? 'http://proxy/v1' : 'http://tei:80';
    issue('EMBEDDING_API_BASE_URL', `is required with EMBEDDING_PROVIDER=${provider} (e.g. ${example})`);
  }
  if ((provider === 'http-compat' || provider === 'inprocess') && !c.EMBEDDING_MODEL) {
    issue(
      'EMBEDDING_MODEL',
      provider === 'http-compat'
        ? 'is required with EMBEDDING_PROVIDER=http-compat (sent as `model`)'
        : 'is required with EMBEDDING_PROVIDER=inprocess (a local model directory)',
    );
  }
}

/**
 * `kilde serve ingest` and `kilde serve retrieve` demand an explicit dense provider (`none` is a
 * choice too); `all` merges shapes, which drops this refinement, and defaults to lexical-only.
 */
export function requireEmbeddingProvider(service: string) {
  return (c: { EMBEDDING_PROVIDER?: string | undefined }, ctx: z.RefinementCtx) => {
    if (c.EMBEDDING_PROVIDER !== undefined) return;
    ctx.addIssue({
      code: 'custom',
      path: ['EMBEDDING_PROVIDER'],
      message: `is required by \`kilde serve ${service}\`: http-compat, inference-server, inprocess, or none (lexical-only, no dense vectors)`,
    });
  };
}
