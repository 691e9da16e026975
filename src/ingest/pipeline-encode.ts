import type { LexicalChunk } from '../embed/bm25/lexical-stage.js';
import type { IndexPoint } from '../index/contract.js';
import type { PipelineParts } from './pipeline.js';
import { cancelledIf, type PipelineProgress, type StageObserver, timed } from './stages.js';

/* The embedding stages of one batch of points: dense vectors, then the lexical side. */

/** Progress through the embedding stages of a file's batches (see `PipelineProgress`). */
export interface Tally {
  report: (progress: PipelineProgress) => void;
  done: number;
  total?: number;
}

const SPARSE_FAILURE = { code: 'SPARSE_EMBEDDING_FAILED', message: 'Sparse embedding failed' } as const;

/** Dense vectors and the lexical side of one batch of points, set on the points. */
export async function encode(
  parts: PipelineParts,
  points: IndexPoint[],
  observer: StageObserver,
  signal: AbortSignal | undefined,
  tally: Tally,
) {
  if (points.length === 0) return;
  const counts = (done: number) => ({
    ...(tally.total === undefined ? {} : { chunksTotal: tally.total }),
    chunksDone: done,
  });
  const { dense } = parts;
  const texts = points.map((p) => p.content);
  if (dense) {
    tally.report({ stage: 'dense', ...counts(tally.done) });
    const vectors = await timed(
      observer,
      'dense',
      { code: 'EMBEDDING_FAILED', message: 'Embedding failed' },
      async () => {
        const v = await dense.embedDocuments(texts, signal);
        if (v.length !== texts.length)
          throw new Error(`embedder returned ${v.length} vectors for ${texts.length} texts`);
        return v;
      },
    );
    points.forEach((p, i) => {
      p.dense = vectors[i]!;
    });
    cancelledIf(signal);
  }
  // The lexical side of each chunk: its contextual header and text, in its document's language,
  // both derived where the chunk is analysed (the worker pool), from one reading of its words.
  const items = () =>
    points.map(
      (p): LexicalChunk => ({
        content: p.content,
        context: { title: p.meta.title, headers: p.meta.headers },
        languages: p.meta.languages,
        fallback: parts.fallbackLanguage,
      }),
    );
  // Embedded chunks count as done; in lexical-only mode they are done once analysed.
  tally.report({ stage: 'sparse', ...counts(tally.done + (dense ? points.length : 0)) });
  // Points chunked and analysed in one pool task (pool-chunk-lexical.ts) have theirs already: the
  // stage's span stays, its time was observed with the chunking.
  if (points.every((p) => p.lexical !== undefined)) {
    await timed(undefined, 'sparse', SPARSE_FAILURE, () => undefined);
    tally.done += points.length;
    return;
  }
  const lexical = await timed(observer, 'sparse', SPARSE_FAILURE, () => parts.lexical.analyse(items()));
  points.forEach((p, i) => {
    p.lexical = lexical.lexical[i]!;
    const vector = lexical.sparse?.[i];
    if (vector) p.sparse = vector;
  });
  tally.done += points.length;
}
