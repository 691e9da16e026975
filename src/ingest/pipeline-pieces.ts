import type { Chunk, Chunker } from '../chunk/chunker.js';
import type { Heading } from '../chunk/markdown-sections.js';
import { headingsAfter } from '../chunk/markdown-sections.js';
import type { BatchChunker } from '../chunk/pooled-chunker.js';
import { type ChunkInput, cutPoint, documentSegments } from '../chunk/segments.js';
import type { ExtractedDocument, StreamedText } from '../extract/extractor.js';
import { joinLineHyphens } from '../extract/line-hyphens.js';
import { dropTableOfContents } from '../extract/page-furniture.js';

/*
 * How extracted text reaches the chunker: documents cut into segments of at most
 * `INGEST_SEGMENT_CHARS` (a streamed file a segment at a time), chunks shifted back into place.
 */

/** One segment to chunk: which document, where in it, and what the chunker gets. */
export interface Piece {
  doc: number;
  offset: number;
  input: ChunkInput;
}

/**
 * The documents' segments (src/chunk/segments.ts) in groups of at most `segmentChars` characters:
 * the short documents of a file are chunked in one call, a long one a segment at a time.
 */
export function* chunkGroups(docs: readonly ExtractedDocument[], segmentChars: number): Generator<Piece[]> {
  let group: Piece[] = [];
  let chars = 0;
  for (const [doc, d] of docs.entries()) {
    for (const { segment, input } of documentSegments(d.text, d.pages, segmentChars)) {
      const size = segment.end - segment.start;
      if (group.length > 0 && chars + size > segmentChars) {
        yield group;
        group = [];
        chars = 0;
      }
      group.push({ doc, offset: segment.start, input });
      chars += size;
    }
  }
  if (group.length > 0) yield group;
}

/**
 * A streamed text's segments (one document), as `chunkGroups` cuts a whole one: pieces are
 * gathered until more than `segmentChars` are held, then one segment is cut where `segmentSpans`
 * would cut it (segments.ts). Page furniture is dropped per segment (a table-of-contents line cut
 * by a segment boundary is judged in two halves: the one difference from a text held whole).
 */
export async function* streamedGroups(
  stream: StreamedText,
  segmentChars: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<Piece[]> {
  let held = '';
  let offset = 0;
  let outer: Heading[] = [];
  const segment = (raw: string): Piece[] => {
    const text = joinLineHyphens(dropTableOfContents({ ...stream.doc, text: raw }).text).text;
    const piece: Piece = { doc: 0, offset, input: { text, ...(outer.length > 0 ? { outer } : {}) } };
    outer = headingsAfter(text, 0, text.length, outer);
    offset += text.length;
    return [piece];
  };
  for await (const piece of stream.pieces(signal)) {
    held += piece;
    while (held.length > segmentChars) {
      const end = cutPoint(held, 0, segmentChars);
      const raw = held.slice(0, end);
      held = held.slice(end);
      yield segment(raw);
    }
  }
  if (held.length > 0) yield segment(held);
}

/** A segment's chunk with its offsets moved into the whole document. */
export function shifted(chunk: Chunk, offset: number): Chunk {
  if (offset === 0) return chunk;
  return { ...chunk, char_start: chunk.char_start + offset, char_end: chunk.char_end + offset };
}

export function chunkAll(chunker: Chunker | BatchChunker, inputs: readonly ChunkInput[]) {
  return 'chunkAll' in chunker
    ? chunker.chunkAll(inputs)
    : inputs.map(({ outer, ...doc }) =>
        chunker.chunk({ ...doc, metadata: { languages: [], mime_type: '' } }, outer),
      );
}
