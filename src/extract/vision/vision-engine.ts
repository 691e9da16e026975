import { extractionFailed, toDocument } from '../document.js';
import type { ExtractedDocument, Extractor } from '../extractor.js';
import { tidyMarkdown } from '../inprocess/content.js';
import type { PageImages, PageRenderer } from './page-images.js';
import { DEFAULT_PROFILE, isPublicProfile, type VisionProfile, visionPrompt } from './prompts.js';
import type { VisionClient } from './vision-client.js';

export interface VisionEngineOptions {
  renderPages: PageRenderer;
  client: VisionClient;
  languageHint: string | undefined;
}

/**
 * `vision-llm`: the document rendered to page images (office formats through the office renderer),
 * all pages sent in one call to the vision model with the profile's prompt, its Markdown the
 * document's text. Profiles: `general` (the default), `diagram`, `ocr`.
 */
export function createVisionExtractor(o: VisionEngineOptions): Extractor {
  return {
    name: 'vision-llm',
    acceptsProfile: true,
    async extract(file, options) {
      const profile = options?.profile ?? DEFAULT_PROFILE;
      if (!isPublicProfile(profile)) {
        throw extractionFailed(`Unknown vision profile "${profile}"; choose one of general, diagram, ocr`);
      }
      const images = await o.renderPages(file, options?.signal);
      const text = await o.client.transcribe(
        visionPrompt(profile, { pages: images.pages.length, languageHint: o.languageHint }),
        images.pages,
        options?.signal,
      );
      return [visionDocument(text, images, 'vision-llm', profile)];
    },
  };
}

/** A vision engine's document: the text, the rendered PDF's metadata, how many pages the model saw. */
export function visionDocument(
  text: string,
  images: PageImages,
  engine: string,
  profile: VisionProfile,
  metadata: Record<string, unknown> = {},
): ExtractedDocument {
  const doc = toDocument(
    {
      text: tidyMarkdown(text),
      metadata: {
        ...images.metadata,
        ...metadata,
        page_count: images.totalPages,
        vision_pages: images.pages.length,
        vision_dpi: Math.min(...images.pages.map((p) => p.dpi)),
      },
    },
    images.mime,
  );
  return { ...doc, extractor: engine, vision_profile: profile };
}
