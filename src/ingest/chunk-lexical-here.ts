import { setImmediate } from 'node:timers/promises';
import type { Chunk } from '../chunk/chunker.js';
import { type ChunkSetup, chunkInWorker } from '../chunk/pool-task.js';
import type { Bm25Language } from '../embed/bm25/analysis.js';
import { type LexicalOutput, unpackSparse } from '../embed/bm25/lexical-stage.js';
import { analyseInWorker } from '../embed/bm25/pool-task.js';
import type { SparseVector } from '../index/contract.js';
import { type ChunkedLexical, type LexicalDoc, lexicalItems } from './pool-chunk-lexical.js';

/*
 * The `chunk-lexical` task (pool-chunk-lexical.ts) run in the pipeline's own process, when the
 * pool's worker is busy reading other files (`WorkerPool.callerTakes`): the chunker and the
 * analysis a worker runs, with the setup its pool gives it, so the chunks and terms are the same.
 * Loaded on first use: a run that never takes such a task never loads the chunker or the stemmers here.
 */

/**
 * Chunks and analyses `docs` here, a document at a time, letting the event loop in between: the
 * worker's answers are taken and its next task sent meanwhile, so it is not left idle.
 */
export async function chunkLexicalHere(
  docs: readonly LexicalDoc[],
  o: { here: ChunkSetup; fallback: Bm25Language; sparse: boolean },
  signal?: AbortSignal,
): Promise<ChunkedLexical> {
  const chunks: Chunk[][] = [];
  const lexical: string[] = [];
  const sparse: SparseVector[] = [];
  let analyseMs = 0;
  for (const doc of docs) {
    signal?.throwIfAborted();
    const [list = []] = await chunkInWorker([doc.input], o.here);
    chunks.push(list);
    const started = performance.now();
    const out = analyseInWorker(lexicalItems(list, doc, o.fallback), o.sparse);
    analyseMs += performance.now() - started;
    lexical.push(...out.lexical);
    if (out.sparse) sparse.push(...unpackSparse(out.sparse));
    await setImmediate();
  }
  const analysed: LexicalOutput = o.sparse ? { lexical, sparse } : { lexical };
  return { chunks, lexical: analysed, analyseSeconds: analyseMs / 1000 };
}
