import type { Chunker } from '../chunk/chunker.js';
import { createChunker } from '../chunk/create-chunker.js';
import { loadTokenCounter } from '../chunk/tokenizer.js';
import { LexicalAnalyzer } from '../embed/bm25/analysis.js';
import { analyseItems, packSparse } from '../embed/bm25/lexical-stage.js';
import { KildeError } from '../errors.js';
import type { SourceFile } from '../extract/extractor.js';
import type { FileKind } from '../extract/file-type.js';
import { joinPdf, readDocument, readPdfPart } from '../extract/inprocess-engine.js';
import { detectLanguages } from '../extract/languages.js';
import type { FromWorker, TaskInput, TaskOutputs, TaskResult, ToWorker, WorkerSetup } from './tasks.js';

/*
 * The entry of every worker process of the pool (`worker-pool.ts`). It takes its setup, then one
 * turn at a time (one task, or several callers' small tasks merged): for each task it first says it
 * has started (the caller's time limit runs from then, not from when it was queued), then runs it
 * in this process, where a runaway document can only exhaust this process's heap or time. It ends with the pool (its IPC channel closing).
 */
/** This process's resident memory once its modules are loaded: what a fresh worker holds. */
const START_RSS = process.memoryUsage.rss();
let setup: WorkerSetup | undefined;
let chunker: Promise<Chunker> | undefined;
let analyzer: LexicalAnalyzer | undefined;

const send = (msg: FromWorker): void => {
  process.send?.(msg);
};

// Profiled (`--cpu-prof`, passed on by the pool): the pool's SIGTERM ends this process through
// `exit`, so the profile is written. Only then: a handler cannot run while a task holds the thread.
if (process.execArgv.some((a) => a.startsWith('--cpu-prof'))) process.on('SIGTERM', () => process.exit(0));

process.on('message', (msg: ToWorker) => {
  if (msg.type === 'setup') {
    setup = msg.setup;
    return;
  }
  if (msg.type === 'preload') {
    // PDFium, which reads the most common uploads. Not the language detector's table: a plainly
    // English document is decided by its stop words (languages.ts), so a worker loads it on the
    // first document that needs it.
    // A failure here is the first PDF's to report (it falls back to pdf.js), not the worker's end.
    if (setup?.pdfReader !== 'pdfjs') {
      void import('../extract/inprocess/pdfium.js').then((m) => m.loadPdfium()).catch(() => undefined);
    }
    return;
  }
  void runTurn(msg.tasks);
});

/**
 * A turn's tasks one after another, each answered as soon as it is done; the last answer carries the
 * worker's memory (the pool replaces a kept idle worker that has grown).
 */
async function runTurn(tasks: Array<{ id: number; input: TaskInput }>): Promise<void> {
  for (const [k, { id, input }] of tasks.entries()) {
    send({ type: 'started', id });
    const result = await run(input, (item) => send({ type: 'started', id, item }));
    const last = k === tasks.length - 1;
    send({
      type: 'result',
      id,
      result,
      ...(last ? { memory: { rss: process.memoryUsage.rss(), startRss: START_RSS } } : {}),
    });
  }
}
process.on('disconnect', () => process.exit(0));

/** `started(item)`: a task over many items says when each item after the first starts. */
async function run(
  input: TaskInput,
  started: (item: number) => void = () => undefined,
): Promise<TaskResult<TaskInput['kind']>> {
  try {
    return { ok: true, value: await perform(input, started) };
  } catch (err) {
    if (err instanceof KildeError) {
      return { ok: false, error: { code: err.code, status: err.statusCode, message: err.message } };
    }
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, error: { code: 'INTERNAL', status: 500, message: message.split('\n')[0] ?? '' } };
  }
}

function setupOf(): WorkerSetup {
  if (!setup) throw new Error('a task arrived before the worker was set up');
  return setup;
}

async function perform(
  input: TaskInput,
  started: (item: number) => void,
): Promise<TaskOutputs[TaskInput['kind']]> {
  switch (input.kind) {
    case 'extract':
      return extract(input.file, input.engine, input.only);
    case 'extract-many': {
      const out: TaskOutputs['extract-many'] = [];
      for (const [k, file] of input.files.entries()) {
        if (k > 0) started(k);
        out.push(
          (await run({
            kind: 'extract',
            file,
            engine: input.engine,
            ...(input.only ? { only: input.only } : {}),
          })) as TaskResult<'extract'>,
        );
      }
      return out;
    }
    case 'pdf-part':
      return readPdfPart(input.file, setupOf().limits, input, setupOf().pdfReader);
    case 'pdf-join': {
      const read = await joinPdf(input.parts, input.mime, setupOf().limits);
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
        limits: setupOf().limits,
      });
    case 'check-archive':
      await (await import('../extract/zip-guard.js')).checkArchive(input.path, setupOf().limits);
      return { checked: true };
    case 'docx-layout':
      return (await import('../extract/docx-layout.js')).readDocxLayout(input.path, setupOf().limits, {
        text: input.text,
      });
  }
}

async function extract(
  file: SourceFile,
  engine: string,
  only: readonly FileKind[] | undefined,
): Promise<TaskOutputs['extract']> {
  const read = await readDocument(file, {
    name: engine,
    limits: setupOf().limits,
    ...(only ? { only } : {}),
    ...(setupOf().pdfReader ? { pdfReader: setupOf().pdfReader } : {}),
  });
  return { ...read, languages: detectLanguages(read.content.text) };
}

function chunkerOf(): Promise<Chunker> {
  const c = setupOf().chunking;
  if (!c) throw new Error('this pool was not set up for chunking');
  chunker ??= loadTokenCounter(c.counter === 'approximate' ? undefined : c.counter).then((counter) =>
    createChunker(c.settings, counter),
  );
  return chunker;
}
