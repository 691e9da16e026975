import type { Logger } from 'pino';
import type { WorkerPool } from '../pool/worker-pool.js';
import type { ExtractionRoute, Extractor } from './extractor.js';
import { detectFileType } from './file-type.js';
import type { ExtractTasks } from './pool-tasks.js';
import { judgeSignals, type RouterThresholds } from './routing.js';

export interface RouterOptions {
  /** `EXTRACTION_ROUTER_DEFAULT`. */
  defaultEngine: Extractor;
  /** `EXTRACTION_ROUTER_DIAGRAM_ENGINE`. */
  diagramEngine: Extractor;
  pool: WorkerPool<ExtractTasks>;
  thresholds: RouterThresholds;
  log: Logger;
  /** Counts each decision (`extraction_route_total`). */
  onRoute?: (engine: string, signal: string) => void;
}

/**
 * `EXTRACTION_ENGINE=auto`: a `.docx` goes to the diagram engine when either routing signal fires
 * (its main document part read in the worker pool, behind the same zip checks as every reader),
 * every other file to the default engine. The decision is logged at INFO with the file id (the
 * detector's figures at DEBUG), counted, and carried on the documents (`routing`, `extractor`,
 * `vision_profile`) into the ingest answer and every chunk's `meta`.
 */
export function createAutoRouter(o: RouterOptions): Extractor {
  return {
    name: 'auto',
    acceptsProfile: false,
    async extract(file, options) {
      const type = await detectFileType(file.path, file.filename, file.mimeType);
      let routing: ExtractionRoute = { route: 'default', signal: 'not-docx' };
      if (type.kind === 'docx') {
        const { signals } = await o.pool.run(
          { kind: 'docx-layout', path: file.path, text: false },
          { signal: options?.signal },
        );
        const verdict = judgeSignals(signals, o.thresholds);
        routing = { route: verdict.signal === 'none' ? 'default' : 'diagram', signal: verdict.signal };
        o.log.debug(
          {
            fileId: options?.fileId,
            ...signals,
            drawingRatio: round(verdict.drawingRatio),
            imageWordRatio: round(verdict.imageWordRatio),
            vector: verdict.vector,
            raster: verdict.raster,
          },
          'routing signals',
        );
      }
      const target = routing.route === 'diagram' ? o.diagramEngine : o.defaultEngine;
      // `vision-llm` as the diagram engine is asked for the diagram profile.
      const profile = routing.route === 'diagram' && target.name === 'vision-llm' ? 'diagram' : undefined;
      o.log.info(
        { fileId: options?.fileId, file: file.filename, engine: target.name, ...routing },
        'extraction routed',
      );
      o.onRoute?.(target.name, routing.signal);
      const { profile: _ignored, ...rest } = options ?? {};
      const docs = await target.extract(file, { ...rest, ...(profile ? { profile } : {}) });
      return docs.map((d) => ({
        ...d,
        extractor: d.extractor ?? target.name,
        vision_profile: d.vision_profile ?? null,
        routing,
      }));
    },
    // Readiness probes what the targets probe (an extraction sidecar); the vision engines have none.
    async probe(signal) {
      const targets = new Set([o.defaultEngine, o.diagramEngine]);
      await Promise.all([...targets].map((t) => t.probe?.(signal)));
    },
  };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
