import type { SparseVector } from '../../index/contract.js';
import type { WorkerPool } from '../../pool/worker-pool.js';
import { type Bm25Language, type ChunkContext, LexicalAnalyzer } from './analysis.js';
import type { LexicalTasks } from './pool-task.js';

/**
 * One chunk to analyse: its contextual text and the language to analyse it in, or (`LexicalChunk`)
 * the chunk as stored, whose contextual text and language are derived where it is analysed.
 */
export type LexicalItem = { text: string; language: Bm25Language } | LexicalChunk;

/**
 * A chunk as stored: analysed as `contextualText(content, context)` in
 * `lexicalLanguageOf(languages, fallback, content)`, its words read once (`LexicalAnalyzer.chunk`),
 * in the worker that analyses it rather than in the ingesting thread.
 */
export interface LexicalChunk {
  content: string;
  context: ChunkContext;
  /** Its document's detected languages (ISO 639-1), most likely first. */
  languages?: readonly string[] | undefined;
  /** `SPARSE_LANGUAGE`: the language when neither its stop words nor `languages` give one Kilde stems. */
  fallback: Bm25Language;
}

export interface LexicalOutput {
  /** Per item, its analysed terms joined by spaces (`IndexPoint.lexical`). */
  lexical: string[];
  /** Per item, its BM25 document vector, when the stage writes sparse vectors. */
  sparse?: SparseVector[];
}

/** Sparse vectors packed into three transferable arrays: vector i is [offsets[i], offsets[i+1]). */
export interface PackedSparse {
  offsets: Uint32Array;
  indices: Uint32Array;
  values: Float64Array;
}

/**
 * The ingestion pipeline's lexical stage: every chunk's analysed terms (LanceDB's full-text side)
 * and, with `ENABLE_SPARSE_EMBEDDINGS`, its BM25 vector (Qdrant's `text-sparse`), both from one
 * analysis of the chunk in its document's language.
 */
export interface LexicalStage {
  /** The sparse model named in logs, or undefined when no sparse vectors are written. */
  readonly sparseModel: string | undefined;
  analyse(items: readonly LexicalItem[], signal?: AbortSignal): Promise<LexicalOutput>;
}

/** The analysis itself, shared by the pool's workers and the in-thread stage. */
export function analyseItems(
  analyzer: LexicalAnalyzer,
  items: readonly LexicalItem[],
  sparse: boolean,
): { lexical: string[]; sparse?: SparseVector[] } {
  const lexical: string[] = [];
  const vectors: SparseVector[] = [];
  for (const item of items) {
    if ('content' in item) {
      const d = analyzer.chunk(item.content, item.context, item.languages, item.fallback, sparse);
      lexical.push(d.terms.join(' '));
      if (d.sparse) vectors.push(d.sparse);
      continue;
    }
    if (!sparse) {
      lexical.push(analyzer.documentTerms(item.text, item.language).join(' '));
      continue;
    }
    const d = analyzer.document(item.text, item.language);
    lexical.push(d.terms.join(' '));
    vectors.push(d.sparse);
  }
  return sparse ? { lexical, sparse: vectors } : { lexical };
}

export function packSparse(vectors: ReadonlyArray<SparseVector>): PackedSparse {
  const offsets = new Uint32Array(vectors.length + 1);
  let total = 0;
  vectors.forEach((v, i) => {
    total += v.indices.length;
    offsets[i + 1] = total;
  });
  const indices = new Uint32Array(total);
  const values = new Float64Array(total);
  vectors.forEach((v, i) => {
    indices.set(v.indices, offsets[i]);
    values.set(v.values, offsets[i]);
  });
  return { offsets, indices, values };
}

export function unpackSparse(p: PackedSparse): SparseVector[] {
  const out: SparseVector[] = new Array(p.offsets.length - 1);
  for (let i = 0; i < out.length; i++) {
    const a = p.offsets[i]!;
    const b = p.offsets[i + 1]!;
    out[i] = { indices: Array.from(p.indices.subarray(a, b)), values: Array.from(p.values.subarray(a, b)) };
  }
  return out;
}

/** The stage in the calling thread (tests, small tools). */
export function createLexicalStage(o: { sparseModel?: string | undefined }): LexicalStage {
  const analyzer = new LexicalAnalyzer('english');
  return {
    sparseModel: o.sparseModel,
    analyse: async (items) => analyseItems(analyzer, items, o.sparseModel !== undefined),
  };
}

/** The stage in the worker pool: a large document's chunks take seconds to stem and hash. */
export function createPooledLexicalStage(
  pool: WorkerPool<LexicalTasks>,
  o: { sparseModel?: string | undefined },
): LexicalStage {
  const sparse = o.sparseModel !== undefined;
  return {
    sparseModel: o.sparseModel,
    async analyse(items, signal) {
      if (items.length === 0) return sparse ? { lexical: [], sparse: [] } : { lexical: [] };
      const weight = items.reduce((n, it) => n + ('content' in it ? it.content : it.text).length, 0);
      const out = await pool.run({ kind: 'lexical', items: [...items], sparse }, { signal, weight });
      return out.sparse
        ? { lexical: out.lexical, sparse: unpackSparse(out.sparse) }
        : { lexical: out.lexical };
    },
  };
}
