import { z } from 'zod';
import { joinUrl } from '../net/join-url.js';
import { extractionFailed, toDocument } from './document.js';
import type { Extractor } from './extractor.js';
import { detectFileType } from './file-type.js';
import { postFile, probeUrl, upstreamVariant } from './http-upload.js';
import { joinPages, type ReadContent, tidyMarkdown } from './inprocess/content.js';

export interface DoclingOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}

/** Docling writes this between pages when asked (`md_page_break_placeholder`); split on it for page spans. */
export const DOCLING_PAGE_BREAK = '<!-- kilde:page-break -->';

const answer = z.object({
  document: z.object({ md_content: z.string().nullish(), filename: z.string().nullish() }),
  status: z.string(),
  errors: z.array(z.object({ error_message: z.string().optional() }).passthrough()).nullish(),
});
const failure = z.object({ detail: z.unknown() });

/** `doc-layout`: Docling Serve (`POST /v1/convert/file`, multipart `files`, Markdown answer). */
export function createDoclingExtractor(opts: DoclingOptions): Extractor {
  const f = opts.fetch ?? fetch;
  const headers: Record<string, string> = opts.apiKey ? { 'x-api-key': opts.apiKey } : {};
  return {
    name: 'doc-layout',
    acceptsProfile: false,
    async extract(file, options) {
      const mime = file.mimeType ?? (await detectFileType(file.path, file.filename)).mime;
      const res = await postFile({
        upstream: 'Docling Serve',
        url: joinUrl(opts.baseUrl, 'v1/convert/file'),
        fileField: 'files',
        file,
        mime,
        fields: [
          ['to_formats', 'md'],
          ['image_export_mode', 'placeholder'],
          ['md_page_break_placeholder', DOCLING_PAGE_BREAK],
        ],
        headers,
        timeoutMs: opts.timeoutMs,
        signal: options?.signal,
        fetch: f,
      });
      if (!res.ok)
        throw extractionFailed(
          `Docling Serve: ${detailOf(res.json, res.status)}`,
          upstreamVariant(res.status),
        );
      const parsed = answer.safeParse(res.json);
      if (!parsed.success)
        throw extractionFailed('Docling Serve sent an unexpected answer', 'upstreamFailed', parsed.error);
      const { document, status, errors } = parsed.data;
      const md = document.md_content ?? '';
      if (status === 'failure' || status === 'skipped' || md.trim() === '') {
        const reason = errors?.map((e) => e.error_message).find(Boolean) ?? `conversion ${status}`;
        throw extractionFailed(`Docling Serve: ${reason}`);
      }
      return [toDocument(pagesOf(md), mime)];
    },
    probe: (signal) => probeUrl(joinUrl(opts.baseUrl, 'health'), signal, f, headers),
  };
}

function pagesOf(md: string): ReadContent {
  const cleaned = md.replace(/<!--\s*image\s*-->/g, '');
  const parts = cleaned.split(DOCLING_PAGE_BREAK).map(tidyMarkdown);
  if (parts.length < 2) return { text: tidyMarkdown(cleaned), metadata: {} };
  const { text, pages } = joinPages(parts);
  return { text, pages, metadata: { page_count: parts.length } };
}

/** FastAPI errors carry `detail` as a string or a list of validation issues. */
export function detailOf(json: unknown, status: number): string {
  const parsed = failure.safeParse(json);
  if (!parsed.success) return `answered ${status}`;
  const { detail } = parsed.data;
  if (typeof detail === 'string') return detail;
  return JSON.stringify(detail).slice(0, 200);
}
