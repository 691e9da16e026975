import type { MessagePort } from 'node:worker_threads';
import type { Chunk } from '../chunk/chunker.js';
import type { ChunkerSettings } from '../chunk/create-chunker.js';
import type { PageSpan, SourceFile } from '../extract/extractor.js';
import type { FileKind } from '../extract/file-type.js';
import type { ReadDocument } from '../extract/inprocess-engine.js';
import type { ExtractionLimits } from '../extract/limits.js';
import type { ErrorCode } from '../http/errors.js';

/** What every worker of a pool is set up with (its `workerData`). */
export interface WorkerSetup {
  limits: ExtractionLimits;
  /** Chunking, when the pool chunks: the settings and the counter (`approximate` or a tokenizer.json path). */
  chunking?: { settings: ChunkerSettings; counter: string };
  /** BM25 document encoding, when the pool encodes. */
  sparse?: { model: string; language: 'english' | 'danish' };
}

export type TaskInput =
  | { kind: 'extract'; file: SourceFile; engine: string; only?: readonly FileKind[] }
  | { kind: 'chunk'; docs: Array<{ text: string; pages?: PageSpan[] }> }
  | { kind: 'sparse'; texts: readonly string[] };

/** A task as sent: its input and the port on which the worker says it has started. */
export interface Task {
  input: TaskInput;
  started: MessagePort;
}

/** Sparse vectors packed into three transferable arrays: vector i is [offsets[i], offsets[i+1]). */
export interface PackedSparse {
  offsets: Uint32Array;
  indices: Uint32Array;
  values: Float64Array;
}

export interface TaskOutputs {
  extract: ReadDocument;
  chunk: Chunk[][];
  sparse: PackedSparse;
}

/** KildeErrors do not survive the thread boundary as such; they travel as data. */
export type TaskResult<K extends TaskInput['kind']> =
  | { ok: true; value: TaskOutputs[K] }
  | { ok: false; error: { code: ErrorCode; status: number; message: string } };
