import type { ExtractedDocument, SourceFile, StreamedText } from '../extract/extractor.js';
import { joinDocumentLineHyphens } from '../extract/line-hyphens.js';
import { dropTableOfContents } from '../extract/page-furniture.js';
import { DEFAULT_SEGMENT_CHARS, type IngestResult, type PipelineParts } from './pipeline-parts.js';
import type { IngestTarget } from './request.js';
import { asStageError, cancelled, cancelledIf, inStage, opt, timed } from './stages.js';

/* The convert stage of a pipeline pass: every file of it read, small ones together. */

/** A file as the convert stage left it: its documents (page furniture dropped) and how it was read. */
export interface Extracted {
  docs: ExtractedDocument[];
  extraction: IngestResult['extraction'];
  /** A large plain-text file read as a stream: its one document's text (`docs[0].text` is empty). */
  stream?: StreamedText;
}

const CONVERT_FAILURE = {
  code: 'EXTRACTION_FAILED',
  variant: 'crashed',
  message: 'Extraction failed',
} as const;

/**
 * The convert stage of a pass's files: the files that are not streamed are read together when the
 * engine can (`Extractor.extractMany`: a few worker-pool round trips for the whole pass instead of
 * one per file), one by one otherwise. Each file's time is observed once (as its share of a shared
 * read), and each settles on its own.
 */
export function extractFiles(
  parts: PipelineParts,
  items: ReadonlyArray<{ target: IngestTarget; file: SourceFile }>,
  signal: AbortSignal | undefined,
): Promise<Array<PromiseSettledResult<Extracted>>> {
  return inStage('convert', () => extractPassFiles(parts, items, signal));
}

async function extractPassFiles(
  parts: PipelineParts,
  items: ReadonlyArray<{ target: IngestTarget; file: SourceFile }>,
  signal: AbortSignal | undefined,
): Promise<Array<PromiseSettledResult<Extracted>>> {
  const { extractor, observer } = parts;
  if (!extractor.extractMany) {
    return Promise.all(items.map((it) => settle(extractOne(parts, it.target, it.file, signal))));
  }
  const out: Array<PromiseSettledResult<Extracted>> = [];
  const rest: number[] = [];
  const checked: number[] = [];
  await Promise.all(
    items.map(async (it, i) => {
      const started = performance.now();
      try {
        const streamed = await openStreamed(parts, it.target, it.file, signal);
        if (streamed) {
          out[i] = { status: 'fulfilled', value: streamed };
          observer?.stage('convert', (performance.now() - started) / 1000);
          return;
        }
        rest.push(i);
        checked[i] = (performance.now() - started) / 1000;
      } catch (err) {
        out[i] = { status: 'rejected', reason: err };
        observer?.stage('convert', (performance.now() - started) / 1000);
      }
    }),
  );
  if (rest.length === 0) return out;
  rest.sort((a, b) => a - b);
  const started = performance.now();
  const read = await extractor
    .extractMany(
      rest.map((i) => items[i]!.file),
      opt(signal),
    )
    .catch((reason: unknown) =>
      rest.map((): PromiseSettledResult<ExtractedDocument[]> => ({ status: 'rejected', reason })),
    );
  const share = (performance.now() - started) / 1000 / rest.length;
  rest.forEach((i, k) => {
    observer?.stage('convert', (checked[i] ?? 0) + share);
    const r = read[k]!;
    if (r.status === 'rejected') {
      out[i] = { status: 'rejected', reason: asStageError(r.reason, CONVERT_FAILURE) };
    } else if (signal?.aborted) {
      out[i] = { status: 'rejected', reason: cancelled() };
    } else {
      out[i] = { status: 'fulfilled', value: extractedOf(parts, r.value) };
    }
  });
  return out;
}

/** One file read alone (an engine without `extractMany`). */
async function extractOne(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  signal: AbortSignal | undefined,
): Promise<Extracted> {
  // One convert observation per file, whichever way it was read.
  const started = performance.now();
  let docs: ExtractedDocument[];
  try {
    const streamed = await openStreamed(parts, target, file, signal);
    if (streamed) return streamed;
    docs = await timed(undefined, 'convert', CONVERT_FAILURE, () =>
      parts.extractor.extract(file, { fileId: target.fileId, ...opt(signal) }),
    );
  } finally {
    parts.observer?.stage('convert', (performance.now() - started) / 1000);
  }
  cancelledIf(signal);
  return extractedOf(parts, docs);
}

/** A plain-text file larger than one segment, opened as a stream: its text is never held whole. */
async function openStreamed(
  parts: PipelineParts,
  target: IngestTarget,
  file: SourceFile,
  signal: AbortSignal | undefined,
): Promise<Extracted | undefined> {
  const { openText } = parts.extractor;
  if (!openText) return undefined;
  const minBytes = parts.segmentChars ?? DEFAULT_SEGMENT_CHARS;
  const stream = await timed(undefined, 'convert', CONVERT_FAILURE, () =>
    openText.call(parts.extractor, file, { minBytes, ...opt(signal) }),
  );
  if (!stream) return undefined;
  parts.log.debug({ fileId: target.fileId }, 'plain text streamed (not held whole)');
  cancelledIf(signal);
  return { docs: [stream.doc], extraction: { engine: parts.extractor.name, profile: null }, stream };
}

/** The extracted documents with page furniture dropped, and the engine, profile and route that read them. */
function extractedOf(parts: PipelineParts, docs: ExtractedDocument[]): Extracted {
  const engine = docs.find((d) => d.extractor)?.extractor ?? parts.extractor.name;
  const profile = docs.find((d) => d.vision_profile)?.vision_profile ?? null;
  const routing = docs.find((d) => d.routing)?.routing;
  return {
    // Page furniture (table-of-contents lines) goes before chunking, whichever engine extracted,
    // and words hyphenated over a line break are joined again.
    docs: docs.map((d) => joinDocumentLineHyphens(dropTableOfContents(d))),
    extraction: { engine, profile, ...(routing ? { route: routing.route, signal: routing.signal } : {}) },
  };
}

function settle<T>(p: Promise<T>): Promise<PromiseSettledResult<T>> {
  return p.then(
    (value) => ({ status: 'fulfilled' as const, value }),
    (reason: unknown) => ({ status: 'rejected' as const, reason }),
  );
}
