import type { TaskHandlers } from '../../pool/worker-runtime.js';
import { LexicalAnalyzer } from './analysis.js';
import { analyseItems, type LexicalItem, type PackedSparse, packSparse } from './lexical-stage.js';

/*
 * The lexical stage's task in the worker pool (src/pool/): chunks' terms, and BM25 vectors when
 * `sparse` (lexical-stage.ts sends it). Callers import the types only; the handler loads in the workers.
 */

export type LexicalTasks = {
  lexical: {
    input: { items: LexicalItem[]; sparse: boolean };
    output: { lexical: string[]; sparse?: PackedSparse };
  };
};

let analyzer: LexicalAnalyzer | undefined;

/** The items' analysis in this worker, packed for the way back (shared by the tasks that analyse). */
export function analyseInWorker(
  items: readonly LexicalItem[],
  sparse: boolean,
): LexicalTasks['lexical']['output'] {
  // Each item names its language; the analyzer's fallback is never used here.
  analyzer ??= new LexicalAnalyzer('english');
  const out = analyseItems(analyzer, items, sparse);
  return out.sparse ? { lexical: out.lexical, sparse: packSparse(out.sparse) } : { lexical: out.lexical };
}

export const lexicalHandlers: TaskHandlers<LexicalTasks, unknown> = {
  lexical: (input) => analyseInWorker(input.items, input.sparse),
};
