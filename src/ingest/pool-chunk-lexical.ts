import type { Chunk } from '../chunk/chunker.js';
import { type ChunkSetup, chunkInWorker } from '../chunk/pool-task.js';
import type { ChunkInput } from '../chunk/segments.js';
import type { Bm25Language } from '../embed/bm25/analysis.js';
import {
  type LexicalChunk,
  type LexicalOutput,
  type PackedSparse,
  unpackSparse,
} from '../embed/bm25/lexical-stage.js';
import { analyseInWorker } from '../embed/bm25/pool-task.js';
import type { WorkerPool } from '../pool/worker-pool.js';
import type { TaskHandlers } from '../pool/worker-runtime.js';

/*
 * Chunking and the lexical stage of small documents as one task of the ingestion pool
 * (pool-worker.ts): the worker that chunks a document analyses its chunks too, so the text crosses
 * the process boundary once and a pass makes one round trip fewer (docs/performance.md). The
 * chunks' lexical side is exactly what the lexical stage would make of the points built from them
 * (`LexicalChunk`: the document's title, the chunk's headings, the document's languages).
 */

/** A document to chunk and analyse: its input, and what the analysis reads of its metadata. */
export interface LexicalDoc {
  input: ChunkInput;
  title?: string;
  languages?: string[];
}

/**
 * A chunk as the task answers it: without its `content` when that is the document's text between
 * its offsets (the caller, which sent that text, cuts it again), so the text does not cross back.
 */
export type SentChunk = Omit<Chunk, 'content'> & { content?: string };

export type ChunkLexicalTasks = {
  'chunk-lexical': {
    input: { docs: LexicalDoc[]; fallback: Bm25Language; sparse: boolean };
    /** Per document its chunks; per chunk (all documents, in order; blank ones '') its terms. */
    output: { chunks: SentChunk[][]; lexical: string[]; sparse?: PackedSparse; analyseMs: number };
  };
};

/** The chunks of each document, and each non-blank chunk's lexical side, in order. */
export interface ChunkedLexical {
  chunks: Chunk[][];
  lexical: LexicalOutput;
  /** Of the task's time, the analysis's (the `sparse` stage's). */
  analyseSeconds: number;
}

/** Whether a chunk becomes a point (the pipeline drops blank ones): it is analysed only then. */
export const kept = (chunk: Chunk) => chunk.content.trim() !== '';

export const chunkLexicalHandlers: TaskHandlers<ChunkLexicalTasks, ChunkSetup> = {
  async 'chunk-lexical'(input, ctx) {
    const chunks = await chunkInWorker(
      input.docs.map((d) => d.input),
      ctx.setup(),
    );
    const started = performance.now();
    const items = chunks.flatMap((list, k) => lexicalItems(list, input.docs[k]!, input.fallback));
    const out = analyseInWorker(items, input.sparse);
    const analyseMs = performance.now() - started;
    const sent = chunks.map((list, k) => list.map((c) => sentChunk(c, input.docs[k]!.input.text)));
    return { chunks: sent, lexical: out.lexical, ...(out.sparse ? { sparse: out.sparse } : {}), analyseMs };
  },
};

/** A document's kept chunks as the lexical stage analyses them (the points they become, their meta). */
export function lexicalItems(
  chunks: readonly Chunk[],
  doc: LexicalDoc,
  fallback: Bm25Language,
): LexicalChunk[] {
  return chunks.filter(kept).map((chunk) => ({
    content: chunk.content,
    // As `chunkMeta` sets them and the lexical stage reads them from a point's meta.
    context: {
      title: doc.title || undefined,
      headers: chunk.headers && chunk.headers.length > 0 ? [...chunk.headers] : undefined,
    },
    languages: doc.languages && doc.languages.length > 0 ? doc.languages : undefined,
    fallback,
  }));
}

/** `chunk` without its content when `text` holds it at its offsets. */
function sentChunk(chunk: Chunk, text: string): SentChunk {
  if (chunk.content !== text.slice(chunk.char_start, chunk.char_end)) return chunk;
  const { content: _, ...rest } = chunk;
  return rest;
}

/** The chunk a `SentChunk` stands for: its content cut from the text the caller sent. */
function receivedChunk(chunk: SentChunk, text: string): Chunk {
  if (chunk.content !== undefined) return chunk as Chunk;
  return { ...chunk, content: text.slice(chunk.char_start, chunk.char_end) };
}

/** The longest document chunked in the caller's own process: ≈ 20–40 ms of its event loop. */
export const HERE_DOC_CHARS = 64 * 1024;

/** Chunks and analyses documents in one task of the ingestion pool. */
export type ChunkLexical = (docs: readonly LexicalDoc[], signal?: AbortSignal) => Promise<ChunkedLexical>;

/**
 * Chunks and analyses in the pool, or in this process when the pool's workers are busy with
 * extraction that outweighs the task (`WorkerPool.callerTakes`: a pass's documents while the worker
 * reads the next pass's PDFs and DOCX), with the workers' own setup and functions, so the chunks and
 * terms are the same (chunk-lexical-here.ts). Only documents of at most `HERE_DOC_CHARS`: this
 * process's event loop (a server's requests) waits for one document at a time.
 */
export function createPooledChunkLexical(
  pool: WorkerPool<ChunkLexicalTasks>,
  o: { fallback: Bm25Language; sparse: boolean },
): ChunkLexical {
  const setup = pool.setup as ChunkSetup | undefined;
  return async (docs, signal) => {
    const weight = docs.reduce((n, d) => n + d.input.text.length, 0);
    const short = docs.every((d) => d.input.text.length <= HERE_DOC_CHARS);
    if (setup?.chunking && short && pool.callerTakes(weight)) {
      const { chunkLexicalHere } = await import('./chunk-lexical-here.js');
      return chunkLexicalHere(docs, { ...o, here: setup }, signal);
    }
    const out = await pool.run(
      { kind: 'chunk-lexical', docs: [...docs], fallback: o.fallback, sparse: o.sparse },
      // Light work (merged with other queued small tasks, one worker) up to the pool's limits.
      { signal, weight },
    );
    return {
      chunks: out.chunks.map((list, k) => list.map((c) => receivedChunk(c, docs[k]!.input.text))),
      lexical: out.sparse
        ? { lexical: out.lexical, sparse: unpackSparse(out.sparse) }
        : { lexical: out.lexical },
      analyseSeconds: out.analyseMs / 1000,
    };
  };
}
