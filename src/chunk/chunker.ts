import type { ExtractedDocument } from '../extract/extractor.js';
import type { Heading } from './markdown-sections.js';

/** A chunk of one extracted document, before embedding. */
export interface Chunk {
  content: string;
  /** Heading breadcrumb, outermost first (markdown mode). */
  headers?: string[];
  /** Pages the chunk touches (1-based), when the document has pages. */
  pages?: number[];
  /** Offsets into the document's `text`. */
  char_start: number;
  char_end: number;
}

/** Splits documents into chunks; `split_id` is assigned sequentially by the pipeline across documents. */
export interface Chunker {
  readonly mode: 'token' | 'markdown' | 'word' | 'sentence' | 'passage';
  /** `outer`: the headings in effect where `doc` starts, when it is one segment of a longer text. */
  chunk(doc: ExtractedDocument, outer?: readonly Heading[]): Chunk[];
}

/** Counts tokens the way the embedding model does. */
export interface TokenCounter {
  count(text: string): number;
  /** Token boundaries as character offsets [start, end) into `text` (for cutting at token limits). */
  offsets(text: string): Array<[number, number]>;
  /** `count` of each text, in one call (faster for a tokenizer in another thread). */
  countMany?(texts: string[]): number[];
  /** `countMany` without blocking the calling thread while the tokenizer works. */
  countManyAsync?(texts: string[]): Promise<number[]>;
  /** What counts: a tokenizer file path, or `approximate` for the built-in estimate. */
  readonly source?: string;
  /** Tokens the model adds around every input ([CLS]/[SEP] for BERT); not part of `count`. */
  readonly specialTokens?: number;
  /** Releases native resources (a tokenizer worker thread). */
  close?(): Promise<void>;
}
