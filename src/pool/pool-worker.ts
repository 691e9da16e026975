import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import type { Chunker } from '../chunk/chunker.js';
import { createChunker } from '../chunk/create-chunker.js';
import { loadTokenCounter } from '../chunk/tokenizer.js';
import { LexicalAnalyzer } from '../embed/bm25/analysis.js';
import { analyseItems, packSparse } from '../embed/bm25/lexical-stage.js';
import { readDocument } from '../extract/inprocess-engine.js';
import { detectLanguages } from '../extract/languages.js';
import { KildeError } from '../http/errors.js';
import type { Task, TaskInput, TaskOutputs, TaskResult, WorkerSetup } from './tasks.js';

/*
 * The entry of every worker of the pool (`worker-pool.ts`). Each task first says on its port that
 * it has started (the caller's time limit runs from then, not from when it was queued), then runs
 * in this thread, where a runaway document can only exhaust this worker's heap or time.
 */
const setup = workerData as WorkerSetup;
let chunker: Promise<Chunker> | undefined;
let analyzer: LexicalAnalyzer | undefined;

export default async function run(task: Task): Promise<unknown> {
  task.started.postMessage('started');
  task.started.close();
  try {
    const value = await perform(task.input);
    const result: TaskResult<TaskInput['kind']> = { ok: true, value };
    // Sparse vectors and page images move to the caller instead of being copied.
    const transfer =
      'lexical' in value && value.sparse
        ? [value.sparse.offsets.buffer, value.sparse.indices.buffer, value.sparse.values.buffer]
        : 'totalPages' in value
          ? value.pages.map((p) => p.png.buffer)
          : [];
    if (transfer.length === 0) return result;
    return move({ [transferableSymbol]: transfer, [valueSymbol]: result });
  } catch (err) {
    if (err instanceof KildeError) {
      return { ok: false, error: { code: err.code, status: err.statusCode, message: err.message } };
    }
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, error: { code: 'INTERNAL', status: 500, message: message.split('\n')[0] ?? '' } };
  }
}

async function perform(input: TaskInput): Promise<TaskOutputs[TaskInput['kind']]> {
  switch (input.kind) {
    case 'extract': {
      const read = await readDocument(input.file, {
        name: input.engine,
        limits: setup.limits,
        ...(input.only ? { only: input.only } : {}),
      });
      return { ...read, languages: detectLanguages(read.content.text) };
    }
    case 'chunk': {
      const c = await chunkerOf();
      return input.docs.map(({ outer, ...doc }) =>
        c.chunk({ ...doc, metadata: { languages: [], mime_type: '' } }, outer),
      );
    }
    case 'lexical': {
      // Each item names its language; the analyzer's fallback is never used here.
      analyzer ??= new LexicalAnalyzer('english');
      const out = analyseItems(analyzer, input.items, input.sparse);
      return out.sparse ? { lexical: out.lexical, sparse: packSparse(out.sparse) } : { lexical: out.lexical };
    }
    // Loaded on first use: a worker that never renders never loads pdf.js's canvas path or Skia.
    case 'render':
      return (await import('../extract/vision/render-pdf.js')).renderPdf(input.path, {
        dpi: input.dpi,
        maxPages: input.maxPages,
        limits: setup.limits,
      });
    case 'check-archive':
      await (await import('../extract/zip-guard.js')).checkArchive(input.path, setup.limits);
      return { checked: true };
    case 'docx-layout':
      return (await import('../extract/docx-layout.js')).readDocxLayout(input.path, setup.limits, {
        text: input.text,
      });
  }
}

function chunkerOf(): Promise<Chunker> {
  const c = setup.chunking;
  if (!c) throw new Error('this pool was not set up for chunking');
  chunker ??= loadTokenCounter(c.counter === 'approximate' ? undefined : c.counter).then((counter) =>
    createChunker(c.settings, counter),
  );
  return chunker;
}
