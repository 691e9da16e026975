import { z } from 'zod';
import { inert, int, number, oneOf, optionalOneOf, optionalString, string, url } from './fields.js';
import { kernelPieces } from './shared.js';

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
  EXTRACTION_TIMEOUT: int(300, 'Time-out of one extraction by an HTTP engine, seconds.', { min: 1 }),
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
export type ExtractionSettings = z.output<typeof extractionSchema>;

/** `kilde serve extractor`: a Kreuzberg-compatible `POST /extract` served by the `inprocess` engine. */
export const extractorServiceSchema = z.object({
  ...kernelPieces,
  EXTRACTOR_MAX_UPLOAD_BYTES: int(
    100 * 1024 * 1024,
    'Largest file `kilde serve extractor` accepts per multipart part (100 MiB, as Kreuzberg); larger parts get 413.',
    { min: 1 },
  ),
});
export type ExtractorServiceConfig = z.output<typeof extractorServiceSchema>;
