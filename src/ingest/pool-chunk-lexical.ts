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
    const items: LexicalChunk[] = [];
    chunks.forEach((list, k) => {
      const doc = input.docs[k]!;
      for (const chunk of list) {
        if (!kept(chunk)) continue;
        items.push({
          content: chunk.content,
          // As `chunkMeta` sets them and the lexical stage reads them from a point's meta.
          context: {
            title: doc.title || undefined,
            headers: chunk.headers && chunk.headers.length > 0 ? [...chunk.headers] : undefined,
          },
          languages: doc.languages && doc.languages.length > 0 ? doc.languages : undefined,
          fallback: input.fallback,
        });
      }
    });
    const out = analyseInWorker(items, input.sparse);
    const analyseMs = performance.now() - started;
    const sent = chunks.map((list, k) => list.map((c) => sentChunk(c, input.docs[k]!.input.text)));
    return { chunks: sent, lexical: out.lexical, ...(out.sparse ? { sparse: out.sparse } : {}), analyseMs };
  },
};

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

/** Chunks and analyses documents in one task of the ingestion pool. */
export type ChunkLexical = (docs: readonly LexicalDoc[], signal?: AbortSignal) => Promise<ChunkedLexical>;

export function createPooledChunkLexical(
  pool: WorkerPool<ChunkLexicalTasks>,
  o: { fallback: Bm25Language; sparse: boolean },
): ChunkLexical {
  return async (docs, signal) => {
    const out = await pool.run(
      { kind: 'chunk-lexical', docs: [...docs], fallback: o.fallback, sparse: o.sparse },
      // Light work (merged with other queued small tasks, one worker) up to the pool's limits.
      { signal, weight: docs.reduce((n, d) => n + d.input.text.length, 0) },
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
