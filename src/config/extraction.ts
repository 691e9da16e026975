import { z } from 'zod';
import { inert, int, number, oneOf, optionalOneOf, optionalString, string, url } from './fields.js';
import { kernelPieces } from './shared.js';

/**
 * Per-document bounds of the in-process engines (`src/extract/limits.ts` checks them). Each is
 * checked as early as the format allows: page count before any page is read, the zip central
 * directory before anything is inflated, nesting while parsing.
 */
export interface ExtractionLimits {
  /** Pages of a PDF (`EXTRACTION_MAX_PAGES`). */
  maxPages: number;
  /** Uncompressed bytes of all entries of an OOXML/ODF/EPUB package (`EXTRACTION_MAX_ARCHIVE_BYTES`). */
  maxArchiveBytes: number;
  /** Entries of such a package (`EXTRACTION_MAX_ARCHIVE_ENTRIES`). */
  maxArchiveEntries: number;
  /** Uncompressed-to-compressed ratio of one entry larger than 1 MiB (`EXTRACTION_MAX_COMPRESSION_RATIO`). */
  maxCompressionRatio: number;
  /** Characters of extracted text (`EXTRACTION_MAX_TEXT_CHARS`). */
  maxTextChars: number;
  /** Open elements of an HTML or XML document (`EXTRACTION_MAX_NESTING`). */
  maxNesting: number;
}

/** Defaults of the per-document limits (also used where no configuration is read: tests, benches). */
export const LIMIT_DEFAULTS: ExtractionLimits = {
  maxPages: 5_000,
  maxArchiveBytes: 256 * 1024 * 1024,
  maxArchiveEntries: 20_000,
  maxCompressionRatio: 500,
  maxTextChars: 20_000_000,
  maxNesting: 512,
};

/**
 * The worker pool and per-document limits of the in-process work (extraction, chunking, BM25).
 * Defaults suit a 2-core, 4 GiB container: two workers of at most 1 GiB heap each beside the
 * main thread. Over a limit a document gets `EXTRACTION_FAILED` naming the variable.
 */
export const extractionLimitsPiece = {
  EXTRACTION_WORKERS: int(
    2,
    'Worker threads that run the in-process extraction engine, chunking and BM25 encoding off the event loop; a worker that dies or runs out of memory is replaced.',
    { min: 1, max: 64 },
  ),
  EXTRACTION_MAX_HEAP_MB: int(
    1024,
    'V8 heap of one worker, MiB; a document that needs more fails with `EXTRACTION_FAILED` and the worker is replaced.',
    { min: 64 },
  ),
  EXTRACTION_MAX_PAGES: int(
    LIMIT_DEFAULTS.maxPages,
    'Most pages of one PDF; checked before any page is read.',
    { min: 1 },
  ),
  EXTRACTION_MAX_ARCHIVE_BYTES: int(
    LIMIT_DEFAULTS.maxArchiveBytes,
    'Most uncompressed bytes of one OOXML/ODF/EPUB package (256 MiB), from its zip central directory before anything is inflated, and verified while inflating.',
    { min: 1 },
  ),
  EXTRACTION_MAX_ARCHIVE_ENTRIES: int(
    LIMIT_DEFAULTS.maxArchiveEntries,
    'Most entries of one OOXML/ODF/EPUB package.',
    { min: 1 },
  ),
  EXTRACTION_MAX_COMPRESSION_RATIO: int(
    LIMIT_DEFAULTS.maxCompressionRatio,
    'Highest uncompressed-to-compressed ratio of a package entry larger than 1 MiB (a zip bomb compresses ~1000:1; very repetitive real documents reach ~250:1).',
    { min: 1 },
  ),
  EXTRACTION_MAX_TEXT_CHARS: int(
    LIMIT_DEFAULTS.maxTextChars,
    'Most characters of text extracted from one document.',
    { min: 1 },
  ),
  EXTRACTION_MAX_NESTING: int(
    LIMIT_DEFAULTS.maxNesting,
    'Deepest element nesting of an HTML document or an XML package part (browsers stop at 512).',
    { min: 8 },
  ),
};

/** Engines this build ships (`createExtractor` builds them). */
export const CONCRETE_ENGINES = [
  'inprocess',
  'pdf-inprocess',
  'sidecar-http',
  'doc-layout',
  'doc-generic',
] as const;
/** Accepted names whose engines arrive with a later release; choosing one fails with a clear message. */
export const PLANNED_ENGINES = ['vision-llm', 'hybrid-diagram'] as const;
/** `auto` is a routing mode over the concrete engines, not an engine itself. */
export const EXTRACTION_ENGINES = [...CONCRETE_ENGINES, ...PLANNED_ENGINES, 'auto'] as const;

export type ConcreteEngine = (typeof CONCRETE_ENGINES)[number];
export type ExtractionEngineName = (typeof EXTRACTION_ENGINES)[number];

const ROUTABLE = [...CONCRETE_ENGINES, ...PLANNED_ENGINES] as const;
const NO_ROUTING = '`EXTRACTION_ENGINE=auto` routing is not in this build';
const NO_VISION = 'the vision engines are not in this build';

export const extractionPiece = {
  EXTRACTION_ENGINE: oneOf(
    EXTRACTION_ENGINES,
    'inprocess',
    'Extraction engine: `inprocess` (pure JavaScript, offline: PDF, DOCX, PPTX, XLSX, ODF, RTF, EPUB, HTML, Markdown, text, CSV), `pdf-inprocess` (PDF only), `sidecar-http` (Kreuzberg HTTP API at `EXTRACTION_SIDECAR_URL`), `doc-layout` (Docling Serve at `DOCLING_SERVE_URL`), `doc-generic` (Unstructured API at `UNSTRUCTURED_API_URL`). `vision-llm`, `hybrid-diagram` and `auto` are accepted names that are not available in this build yet.',
  ),
  EXTRACTION_TIMEOUT: int(
    300,
    "Time-out of one extraction, seconds: an HTTP engine's request, or the in-process engine's work on one document in its worker (the worker is stopped and replaced; the request gets `EXTRACTION_FAILED`). Chunking and BM25 encoding of one document in the worker pool have the same bound.",
    { min: 1 },
  ),
  ...extractionLimitsPiece,
  EXTRACTION_SIDECAR_URL: url(
    undefined,
    'Base URL of a Kreuzberg-compatible extraction sidecar (`POST {url}/extract`), e.g. `http://kreuzberg:8000` or a `kilde serve extractor`. Required by `sidecar-http`.',
  ),
  EXTRACTION_SIDECAR_API_KEY: string(
    '',
    'Sent as `Authorization: Bearer` to the sidecar (set it to the `API_KEY` of a `kilde serve extractor`); empty sends none.',
  ),
  EXTRACTION_SIDECAR_CONFIG: optionalString(
    'Optional Kreuzberg extraction `config` JSON sent with every sidecar request (e.g. `{"output_format":"markdown"}`); unset sends none and the sidecar uses its own defaults.',
  ),
  DOCLING_SERVE_URL: url(
    undefined,
    'Base URL of Docling Serve (`POST {url}/v1/convert/file`), e.g. `http://docling-serve:5001`. Required by `doc-layout`.',
  ),
  DOCLING_SERVE_API_KEY: string(
    '',
    'Sent as `X-Api-Key` to Docling Serve (its `DOCLING_SERVE_API_KEY`); empty sends none.',
  ),
  UNSTRUCTURED_API_URL: url(
    undefined,
    'Base URL of the Unstructured API (`POST {url}/general/v0/general`), e.g. `http://unstructured:8000`. Required by `doc-generic`.',
  ),
  UNSTRUCTURED_API_KEY: string(
    '',
    'Sent as `unstructured-api-key` to the Unstructured API; empty sends none.',
  ),
  UNSTRUCTURED_STRATEGY: oneOf(
    ['auto', 'fast', 'hi_res', 'ocr_only'],
    'auto',
    'Partitioning `strategy` requested from the Unstructured API.',
  ),
  EXTRACTION_ROUTER_DEFAULT: inert(
    optionalOneOf(ROUTABLE, 'Engine for non-diagram documents when `EXTRACTION_ENGINE=auto`.'),
    NO_ROUTING,
  ),
  EXTRACTION_ROUTER_DIAGRAM_ENGINE: inert(
    oneOf(
      ROUTABLE,
      'hybrid-diagram',
      'Engine for diagram-heavy `.docx` files when `EXTRACTION_ENGINE=auto`.',
    ),
    NO_ROUTING,
  ),
  EXTRACTION_ROUTER_MIN_TEXTBOXES: inert(
    int(20, 'Routing signal one: minimum drawing/text-box shapes.', { min: 0 }),
    NO_ROUTING,
  ),
  EXTRACTION_ROUTER_DRAWING_RATIO: inert(
    number(2.0, 'Routing signal one: minimum drawing-to-body word ratio.', { min: 0 }),
    NO_ROUTING,
  ),
  EXTRACTION_ROUTER_MIN_BODY_IMAGES: inert(
    int(1, 'Routing signal two: minimum body images.', { min: 0 }),
    NO_ROUTING,
  ),
  EXTRACTION_ROUTER_MIN_IMAGE_EMU: inert(
    int(
      1_500_000_000_000,
      'Routing signal two: minimum display area of the largest image, squared EMU (about 1.79 square inches).',
      { min: 0 },
    ),
    NO_ROUTING,
  ),
  EXTRACTION_ROUTER_MIN_IMAGE_WORD_RATIO: inert(
    number(0, 'Optional guard on image area against body words; 0 disables it.', { min: 0 }),
    NO_ROUTING,
  ),
  VISION_LLM_API_BASE_URL: inert(
    url(undefined, 'OpenAI-compatible base URL of the vision model; unset disables the vision engines.'),
    NO_VISION,
  ),
  VISION_LLM_MODEL: inert(string('', 'Model on the vision endpoint.'), NO_VISION),
  VISION_LLM_DPI: inert(
    int(150, 'Page rasterisation density for vision engines.', {
      min: 36,
    }),
    NO_VISION,
  ),
  VISION_LLM_MAX_PAGES: inert(int(20, 'Page cap of one vision call.', { min: 1 }), NO_VISION),
  VISION_LLM_MAX_TOKENS: inert(
    int(undefined, 'Output cap of a vision call; exceeding it fails the extraction.', { min: 1 }),
    NO_VISION,
  ),
  VISION_LLM_LANGUAGE_HINT: inert(
    optionalString('Source-language hint for vision prompts, e.g. `Danish`.'),
    NO_VISION,
  ),
  OFFICE_RENDER_URL: inert(url(undefined, 'Office-to-PDF render sidecar for the vision engines.'), NO_VISION),
};

export const extractionSchema = z.object(extractionPiece);

/** The limits as the extraction worker pool takes them. */
export function extractionLimits(c: z.output<typeof limitsSchema>): ExtractionLimits {
  return {
    maxPages: c.EXTRACTION_MAX_PAGES,
    maxArchiveBytes: c.EXTRACTION_MAX_ARCHIVE_BYTES,
    maxArchiveEntries: c.EXTRACTION_MAX_ARCHIVE_ENTRIES,
    maxCompressionRatio: c.EXTRACTION_MAX_COMPRESSION_RATIO,
    maxTextChars: c.EXTRACTION_MAX_TEXT_CHARS,
    maxNesting: c.EXTRACTION_MAX_NESTING,
  };
}
const limitsSchema = z.object(extractionLimitsPiece);
export type ExtractionSettings = z.output<typeof extractionSchema>;

/** `kilde serve extractor`: a Kreuzberg-compatible `POST /extract` served by the `inprocess` engine. */
export const extractorServiceSchema = z.object({
  ...kernelPieces,
  EXTRACTION_TIMEOUT: extractionPiece.EXTRACTION_TIMEOUT,
  ...extractionLimitsPiece,
  EXTRACTOR_MAX_UPLOAD_BYTES: int(
    100 * 1024 * 1024,
    'Largest file `kilde serve extractor` accepts per multipart part (100 MiB, as Kreuzberg); larger parts get 413.',
    { min: 1 },
  ),
});
export type ExtractorServiceConfig = z.output<typeof extractorServiceSchema>;
