import type { ChunkSetup, ChunkTasks } from '../chunk/pool-task.js';
import { chunkHandlers } from '../chunk/pool-task.js';
import type { LexicalTasks } from '../embed/bm25/pool-task.js';
import { lexicalHandlers } from '../embed/bm25/pool-task.js';
import type { ExtractSetup, ExtractTasks } from '../extract/pool-tasks.js';
import { extractHandlers, preloadExtraction } from '../extract/pool-tasks.js';
import { serveTasks } from '../pool/worker-runtime.js';
import { type ChunkLexicalTasks, chunkLexicalHandlers } from './pool-chunk-lexical.js';

/**
 * The tasks of the ingestion pipeline's pool (build.ts): extraction, chunking, the lexical stage,
 * and chunking with the lexical stage in one task (pool-chunk-lexical.ts).
 */
export type IngestTasks = ExtractTasks & ChunkTasks & LexicalTasks & ChunkLexicalTasks;
export type IngestSetup = ExtractSetup & ChunkSetup;

/** The entry of the workers of the ingestion pipeline's pool (callers import its types only). */
serveTasks<IngestTasks, IngestSetup>({
  handlers: { ...extractHandlers, ...chunkHandlers, ...lexicalHandlers, ...chunkLexicalHandlers },
  preload: preloadExtraction,
});
