import { z } from 'zod';
import { type ExtractionLimits, LIMIT_DEFAULTS } from './extraction-limits.js';
import { bool, int, number, oneOf, optionalString, string, url } from './fields.js';
import { kernelPieces } from './shared.js';

export { type ExtractionLimits, LIMIT_DEFAULTS };

/**
 * The worker pool and per-document limits of the in-process work (extraction, chunking, BM25).
 * Defaults suit a 2-core, 4 GiB container: two workers of at most 1 GiB heap each beside the
 * main thread. Over a limit a document gets `EXTRACTION_FAILED` naming the variable.
 */
export const extractionLimitsPiece = {
  EXTRACTION_WORKERS: int(
    2,
    'Worker processes that run the in-process extraction engine, chunking and BM25 encoding off the event loop; a worker that dies or runs out of memory is replaced. A local `kilde ingest` of files totalling at most 8 MiB uses one unless this is set: starting a second worker and loading its libraries again costs more than it saves on so little work.',
    { min: 1, max: 64 },
  ),
  EXTRACTION_WARM_WORKERS: int(
    1,
    'Worker processes kept running while idle (at most `EXTRACTION_WORKERS`), so that an upload after a quiet spell does not wait for a worker to start and load its libraries (about 0.2 s on 2 cores); `kilde serve` starts them once it listens, and they load PDFium then (the language detector loads on the first document that is not plainly English); the others stop after a minute idle. A kept worker that has grown by more than 256 MiB since its start (a large document) is replaced by a fresh one once idle. 0: every idle worker stops, and the next upload starts one.',
    { min: 0, max: 64 },
  ),
  EXTRACTION_PDF_READER: oneOf(
    ['pdfjs', 'pdfium'],
    'pdfium',
    'The library the in-process engines read PDF text with. `pdfium`: PDFium, the PDF engine of Chrome, compiled to WebAssembly (@embedpdf/pdfium): 2–10 times faster than pdf.js on real PDFs (their embedded fonts are parsed in C++), with the same page spans and headings and the spaces between mixed-script runs that pdf.js drops (docs/performance.md); its memory lies outside the V8 heap, so it may grow only to `EXTRACTION_MAX_HEAP_MB` (a document that needs more fails naming it); a file or page it cannot open (damaged, or a page tree nested past its limit) is read by pdf.js. `pdfjs`: Mozilla pdf.js alone. Rendering pages for the vision engines always uses pdf.js.',
  ),
  EXTRACTION_PDF_SPLIT: bool(
    false,
    'Read a PDF of at least 1 MiB and 64 pages in two halves on two pool workers at once, when both are free and the 1-minute load leaves a core idle; the text, pages and headings are the same. Off by default: on 2 cores a 300-page PDF took 1.5 s either way, for about 19 % more CPU and 100 MiB more memory (docs/performance.md); try it on a machine with idle cores.',
  ),
  EXTRACTION_MAX_HEAP_MB: int(
    LIMIT_DEFAULTS.maxHeapMb,
    'V8 heap of one worker process, MiB (`--max-old-space-size`); a document that needs more fails with `EXTRACTION_FAILED` and the worker is replaced.',
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
    'Highest uncompressed-to-compressed ratio of a package entry larger than 1 MiB, and of a whole package declaring more than 1 MiB against its size on disk, both read from the zip central directory before anything is inflated (a zip bomb under 1 MB declaring 100–256 MiB is 100:1 to 1000:1; the office documents of the test fixtures compress at most 16:1).',
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
  'vision-llm',
  'hybrid-diagram',
] as const;
/** The engines that render pages and call the vision model (they need `VISION_LLM_*`). */
export const VISION_ENGINES = ['vision-llm', 'hybrid-diagram'] as const;
/** `auto` is a routing mode over the concrete engines, not an engine itself. */
export const EXTRACTION_ENGINES = [...CONCRETE_ENGINES, 'auto'] as const;

export type ConcreteEngine = (typeof CONCRETE_ENGINES)[number];
export type ExtractionEngineName = (typeof EXTRACTION_ENGINES)[number];

/** Prompt profiles a caller may ask a vision engine for (`profile` of `POST /api/v1/extract`). */
export const VISION_PROFILES = ['general', 'diagram', 'ocr'] as const;
/** Profiles only the `hybrid-diagram` engine uses, for the graph beside a DOCX's native text. */
export const HYBRID_PROFILES = ['diagram-topology', 'figure'] as const;
export type VisionProfile = (typeof VISION_PROFILES)[number] | (typeof HYBRID_PROFILES)[number];

export const extractionPiece = {
  EXTRACTION_ENGINE: oneOf(
    EXTRACTION_ENGINES,
    'inprocess',
    "Extraction engine: `inprocess` (pure JavaScript, offline: PDF, DOCX, PPTX, XLSX, ODF, RTF, EPUB, HTML, Markdown, text, CSV), `pdf-inprocess` (PDF only), `sidecar-http` (Kreuzberg HTTP API at `EXTRACTION_SIDECAR_URL`), `doc-layout` (Docling Serve at `DOCLING_SERVE_URL`), `doc-generic` (Unstructured API at `UNSTRUCTURED_API_URL`), `vision-llm` (pages rendered to PNG and transcribed by the vision model at `VISION_LLM_API_BASE_URL`), `hybrid-diagram` (a DOCX's own text plus a Mermaid graph of its drawings from the vision model; other files go to `vision-llm`), or `auto` (routing: diagram-heavy `.docx` files to `EXTRACTION_ROUTER_DIAGRAM_ENGINE`, everything else to `EXTRACTION_ROUTER_DEFAULT`).",
  ),
  EXTRACTION_TIMEOUT: int(
    300,
    "Time-out of one extraction, seconds: an HTTP engine's request, the office renderer's conversion, or the in-process engine's work on one document in its worker (the worker is stopped and replaced; the request gets `EXTRACTION_FAILED`). Chunking, BM25 encoding and page rendering of one document in the worker pool have the same bound.",
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
  EXTRACTION_ROUTER_DEFAULT: oneOf(
    CONCRETE_ENGINES,
    'inprocess',
    'Engine for everything `auto` does not route to the diagram engine (every non-DOCX file and ordinary Word files). Read only when `EXTRACTION_ENGINE=auto`.',
  ),
  EXTRACTION_ROUTER_DIAGRAM_ENGINE: oneOf(
    CONCRETE_ENGINES,
    'hybrid-diagram',
    'Engine for diagram-heavy `.docx` files when `EXTRACTION_ENGINE=auto` (`vision-llm` here is asked for the `diagram` profile). Read only when `EXTRACTION_ENGINE=auto`.',
  ),
  EXTRACTION_ROUTER_MIN_TEXTBOXES: int(
    20,
    'Routing signal one (vector flowchart): at least this many drawing or text-box shapes in `word/document.xml`.',
    { min: 0 },
  ),
  EXTRACTION_ROUTER_DRAWING_RATIO: number(
    2.0,
    'Routing signal one: words inside text boxes per word of body text (body words counted as at least 1) must reach this too.',
    { min: 0 },
  ),
  EXTRACTION_ROUTER_MIN_BODY_IMAGES: int(
    1,
    'Routing signal two (raster figure): at least this many pictures in the main document part (header and footer logos are in other parts and never count).',
    { min: 0 },
  ),
  EXTRACTION_ROUTER_MIN_IMAGE_EMU: int(
    1_500_000_000_000,
    "Routing signal two: the largest picture's displayed area, `cx·cy` of its `wp:extent` in squared EMU, must reach this too (1.5e12 is about 1.79 square inches).",
    { min: 0 },
  ),
  EXTRACTION_ROUTER_MIN_IMAGE_WORD_RATIO: number(
    0,
    "Optional guard on signal two: the largest picture's area (squared EMU) per word of body text must reach this (e.g. 1e10 lets a 1.5e12 picture route with up to 150 words around it); 0 disables it.",
    { min: 0 },
  ),
  VISION_LLM_API_BASE_URL: url(
    undefined,
    'OpenAI-compatible base URL of the vision model (`POST {url}/chat/completions`, keeping a `/v1`). Required when a vision engine is selected (directly or by `auto`); never probed by readiness.',
  ),
  VISION_LLM_API_KEY: string('', 'Sent as `Authorization: Bearer` to the vision endpoint; empty sends none.'),
  VISION_LLM_MODEL: string('', 'Model on the vision endpoint. Required when a vision engine is selected.'),
  VISION_LLM_DPI: int(
    150,
    'Page rasterisation density (dots per inch). A page that would exceed 16 megapixels at this density is rendered at the density that fits.',
    { min: 36, max: 600 },
  ),
  VISION_LLM_MAX_PAGES: int(
    20,
    'Most pages rendered and sent in the one vision call per document; later pages are not sent (logged as a warning, `vision_pages` < `page_count` in the metadata).',
    { min: 1, max: 200 },
  ),
  VISION_LLM_MAX_TOKENS: int(
    16384,
    'Output cap of a vision call (`max_tokens`). An answer that stops at the cap (`finish_reason: "length"`) or reports more completion tokens fails the extraction with `EXTRACTION_FAILED`; it is never truncated into the index.',
    { min: 1 },
  ),
  VISION_LLM_LANGUAGE_HINT: optionalString(
    'Language of the source documents named in the prompt, e.g. `Danish`; the model is told to keep the text verbatim in it. Unset: "keep the original language".',
  ),
  VISION_LLM_TIMEOUT: int(
    600,
    'Time-out of one vision call, seconds (up to `VISION_LLM_MAX_PAGES` pages and `VISION_LLM_MAX_TOKENS` tokens of output take minutes).',
    { min: 1 },
  ),
  OFFICE_RENDER_URL: url(
    undefined,
    "Office-to-PDF sidecar of the vision engines, speaking Gotenberg's API (`POST {url}/forms/libreoffice/convert`), e.g. `http://gotenberg:3000`. Unset: a local `soffice`/`libreoffice` is run headless if one is on the PATH; without either, office documents fail with the vision engines (PDFs need neither).",
  ),
};

/**
 * Cross-field rule of every schema that carries the extraction variables: a vision engine selected
 * (directly, or as a target of `auto`) needs the vision endpoint and a model, or the service would
 * start and fail every document. Reported at start-up (exit 2) naming the variable.
 */
export function requireVisionEndpoint(
  c: {
    EXTRACTION_ENGINE: ExtractionEngineName;
    EXTRACTION_ROUTER_DEFAULT: ConcreteEngine;
    EXTRACTION_ROUTER_DIAGRAM_ENGINE: ConcreteEngine;
    VISION_LLM_API_BASE_URL?: string | undefined;
    VISION_LLM_MODEL: string;
  },
  ctx: z.RefinementCtx,
): void {
  const chosen =
    c.EXTRACTION_ENGINE === 'auto'
      ? [c.EXTRACTION_ROUTER_DEFAULT, c.EXTRACTION_ROUTER_DIAGRAM_ENGINE]
      : [c.EXTRACTION_ENGINE];
  const vision = chosen.find((e): e is (typeof VISION_ENGINES)[number] =>
    (VISION_ENGINES as readonly string[]).includes(e),
  );
  if (vision === undefined) return;
  const why =
    c.EXTRACTION_ENGINE === 'auto'
      ? `is required by EXTRACTION_ENGINE=auto, which routes to ${vision}`
      : `is required by EXTRACTION_ENGINE=${vision}`;
  if (c.VISION_LLM_API_BASE_URL === undefined)
    ctx.addIssue({ code: 'custom', path: ['VISION_LLM_API_BASE_URL'], message: why });
  if (c.VISION_LLM_MODEL === '') ctx.addIssue({ code: 'custom', path: ['VISION_LLM_MODEL'], message: why });
}

export const extractionSchema = z.object(extractionPiece).superRefine(requireVisionEndpoint);

/** The limits as the extraction worker pool takes them. */
export function extractionLimits(c: z.output<typeof limitsSchema>): ExtractionLimits {
  return {
    maxPages: c.EXTRACTION_MAX_PAGES,
    maxArchiveBytes: c.EXTRACTION_MAX_ARCHIVE_BYTES,
    maxArchiveEntries: c.EXTRACTION_MAX_ARCHIVE_ENTRIES,
    maxCompressionRatio: c.EXTRACTION_MAX_COMPRESSION_RATIO,
    maxTextChars: c.EXTRACTION_MAX_TEXT_CHARS,
    maxNesting: c.EXTRACTION_MAX_NESTING,
    maxHeapMb: c.EXTRACTION_MAX_HEAP_MB,
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
