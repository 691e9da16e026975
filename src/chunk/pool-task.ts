import type { TaskHandlers } from '../pool/worker-runtime.js';
import type { Chunk, Chunker } from './chunker.js';
import { type ChunkerSettings, createChunker } from './create-chunker.js';
import type { ChunkInput } from './segments.js';
import { loadTokenCounter } from './tokenizer.js';

/*
 * Chunking's task in the worker pool (src/pool/): whole documents chunked in a worker
 * (pooled-chunker.ts sends it). Callers import the types only; the handler loads in the workers.
 */

/** What a worker that chunks is set up with: the settings and the counter (`approximate` or a tokenizer.json path). */
export interface ChunkSetup {
  chunking?: { settings: ChunkerSettings; counter: string };
}

export type ChunkTasks = {
  chunk: { input: { docs: ChunkInput[] }; output: Chunk[][] };
};

let chunker: Promise<Chunker> | undefined;

function chunkerOf(setup: ChunkSetup): Promise<Chunker> {
  const c = setup.chunking;
  if (!c) throw new Error('this pool was not set up for chunking');
  chunker ??= loadTokenCounter(c.counter === 'approximate' ? undefined : c.counter).then((counter) =>
    createChunker(c.settings, counter),
  );
  return chunker;
}

/** Chunks `docs` in this worker with the chunker its setup names (shared by the tasks that chunk). */
export async function chunkInWorker(docs: readonly ChunkInput[], setup: ChunkSetup): Promise<Chunk[][]> {
  const c = await chunkerOf(setup);
  return docs.map(({ outer, ...doc }) =>
    c.chunk({ ...doc, metadata: { languages: [], mime_type: '' } }, outer),
  );
}

export const chunkHandlers: TaskHandlers<ChunkTasks, ChunkSetup> = {
  chunk: (input, ctx) => chunkInWorker(input.docs, ctx.setup()),
};
