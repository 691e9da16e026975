import type { Logger } from 'pino';
import type { WorkerPool } from '../../pool/worker-pool.js';
import type { Extractor } from '../extractor.js';
import { detectFileType } from '../file-type.js';
import type { ExtractTasks } from '../pool-tasks.js';
import { judgeSignals, type RouterThresholds } from '../routing.js';
import type { PageRenderer } from './page-images.js';
import { visionPrompt } from './prompts.js';
import type { VisionClient } from './vision-client.js';
import { visionDocument } from './vision-engine.js';

export interface HybridEngineOptions {
  /** The `vision-llm` engine every file but a DOCX goes to. */
  vision: Extractor;
  renderPages: PageRenderer;
  client: VisionClient;
  pool: WorkerPool<ExtractTasks>;
  thresholds: RouterThresholds;
  languageHint: string | undefined;
  log: Logger;
}

/**
 * `hybrid-diagram` (DOCX only; anything else goes to `vision-llm`): the words come from the
 * document itself — paragraphs, tables and the text of text boxes and shapes from
 * `word/document.xml`, in reading order — and the structure from the vision model: a Mermaid
 * graph of the page images, asked for with `diagram-topology` when the labels are shapes (a vector
 * flowchart; the model is given the labels and must use them verbatim) or `figure` when they are
 * pixels (a pasted diagram). The document's Markdown is the native text followed by the graph.
 */
export function createHybridExtractor(o: HybridEngineOptions): Extractor {
  return {
    name: 'hybrid-diagram',
    acceptsProfile: true,
    async extract(file, options) {
      const type = await detectFileType(file.path, file.filename, file.mimeType);
      if (type.kind !== 'docx') return o.vision.extract(file, options);
      // The text is read while the pages are rendered; when either fails the other stops.
      const failed = new AbortController();
      const signal = options?.signal ? AbortSignal.any([options.signal, failed.signal]) : failed.signal;
      const stopOnFailure = <T>(p: Promise<T>) =>
        p.catch((err: unknown) => {
          failed.abort(err);
          throw err;
        });
      const [layout, images] = await Promise.all([
        stopOnFailure(o.pool.run({ kind: 'docx-layout', path: file.path, text: true }, { signal })),
        stopOnFailure(o.renderPages(file, signal)),
      ]);
      const verdict = judgeSignals(layout.signals, o.thresholds);
      // Which kind of diagram it is decides the prompt; with neither signal, what the page holds.
      const profile = verdict.vector
        ? 'diagram-topology'
        : verdict.raster
          ? 'figure'
          : layout.signals.shapes === 0 && layout.signals.bodyImages > 0
            ? 'figure'
            : 'diagram-topology';
      o.log.debug({ file: file.filename, profile, ...layout.signals }, 'hybrid-diagram: native text read');
      const graph = await o.client.transcribe(
        visionPrompt(profile, {
          pages: images.pages.length,
          languageHint: o.languageHint,
          ...(profile === 'diagram-topology' ? { labels: layout.labels } : {}),
        }),
        images.pages,
        options?.signal,
      );
      const text = [layout.markdown ?? '', graph].filter((t) => t.trim() !== '').join('\n\n');
      return [
        visionDocument(text, { ...images, mime: type.mime }, 'hybrid-diagram', profile, layout.metadata),
      ];
    },
  };
}
