import { serveTasks } from '../pool/worker-runtime.js';
import { type ExtractSetup, type ExtractTasks, extractHandlers, preloadExtraction } from './pool-tasks.js';

/** The entry of the workers of an extraction-only pool (`ownPool`: the sidecar, the local CLI). */
serveTasks<ExtractTasks, ExtractSetup>({ handlers: extractHandlers, preload: preloadExtraction });
