import { z } from 'zod';
import { joinUrl } from '../net/join-url.js';
import { detailOf } from './docling-engine.js';
import { extractionFailed, toDocument } from './document.js';
import type { Extractor } from './extractor.js';
import { detectFileType } from './file-type.js';
import { postFile, probeUrl, upstreamVariant } from './http-upload.js';
import { joinPages, type ReadContent, tidyMarkdown } from './inprocess/content.js';
import { DEFAULT_LIMITS } from './limits.js';

export interface UnstructuredOptions {
  baseUrl: string;
  apiKey: string;
  strategy: string;
  timeoutMs: number;
  fetch?: typeof fetch;
}

const element = z.object({
  type: z.string(),
  text: z.string().nullish(),
  metadata: z
    .object({
      page_number: z.number().nullish(),
      languages: z.array(z.string()).nullish(),
      text_as_html: z.string().nullish(),
      category_depth: z.number().nullish(),
    })
    .nullish(),
});
const answer = z.array(element);
type Element = z.infer<typeof element>;

/** Page furniture that would repeat in every chunk. */
const SKIPPED = new Set(['Header', 'Footer', 'PageNumber', 'PageBreak', 'Image']);

/** `doc-generic`: the Unstructured API (`POST /general/v0/general`, elements back, rendered as Markdown). */
export function createUnstructuredExtractor(opts: UnstructuredOptions): Extractor {
  const f = opts.fetch ?? fetch;
  const headers: Record<string, string> = opts.apiKey ? { 'unstructured-api-key': opts.apiKey } : {};
  return {
    name: 'doc-generic',
    acceptsProfile: false,
    async extract(file, options) {
      const mime = file.mimeType ?? (await detectFileType(file.path, file.filename)).mime;
      const res = await postFile({
        upstream: 'Unstructured API',
        url: joinUrl(opts.baseUrl, 'general/v0/general'),
        fileField: 'files',
        file,
        mime,
        fields: [['strategy', opts.strategy]],
        headers,
        timeoutMs: opts.timeoutMs,
        signal: options?.signal,
        fetch: f,
      });
      if (!res.ok) {
        throw extractionFailed(
          `Unstructured API: ${detailOf(res.json, res.status)}`,
          upstreamVariant(res.status),
        );
      }
      const parsed = answer.safeParse(res.json);
      if (!parsed.success)
        throw extractionFailed('Unstructured API sent an unexpected answer', 'upstreamFailed', parsed.error);
      // The HTML reader (htmlparser2) loads only for an answer with a table in HTML.
      const tables = parsed.data.some((e) => e.type === 'Table' && e.metadata?.text_as_html)
        ? (await import('./inprocess/html-markdown.js')).htmlToTidyMarkdown
        : undefined;
      return [toDocument(render(parsed.data, tables), mime, languagesOf(parsed.data))];
    },
    probe: (signal) => probeUrl(joinUrl(opts.baseUrl, 'healthcheck'), signal, f, headers),
  };
}

type HtmlReader = (html: string, limits: typeof DEFAULT_LIMITS) => string;

function render(elements: readonly Element[], tables: HtmlReader | undefined): ReadContent {
  const byPage = new Map<number, string[]>();
  let page = 1;
  for (const el of elements) {
    page = el.metadata?.page_number ?? page;
    if (SKIPPED.has(el.type)) continue;
    const md = markdownOf(el, tables);
    if (md) byPage.set(page, [...(byPage.get(page) ?? []), md]);
  }
  const last = Math.max(0, ...byPage.keys());
  const paged = elements.some((e) => typeof e.metadata?.page_number === 'number');
  const texts = Array.from({ length: last }, (_, i) => tidyMarkdown((byPage.get(i + 1) ?? []).join('\n\n')));
  if (!paged) return { text: texts.join('\n\n'), metadata: {} };
  const { text, pages } = joinPages(texts);
  return { text, pages, metadata: { page_count: last } };
}

function markdownOf(el: Element, tables: HtmlReader | undefined): string {
  const text = (el.text ?? '').trim();
  switch (el.type) {
    case 'Title':
      return text ? `${'#'.repeat(Math.min(6, (el.metadata?.category_depth ?? 0) + 1))} ${text}` : '';
    case 'ListItem':
      return text ? `- ${text}` : '';
    case 'Table':
      return el.metadata?.text_as_html && tables ? tables(el.metadata.text_as_html, DEFAULT_LIMITS) : text;
    case 'CodeSnippet':
      return text ? `\`\`\`\n${text}\n\`\`\`` : '';
    default:
      return text;
  }
}

/** Unstructured reports ISO 639-3 codes per element; the most frequent come first. */
function languagesOf(elements: readonly Element[]): string[] {
  const counts = new Map<string, number>();
  for (const el of elements)
    for (const l of el.metadata?.languages ?? []) counts.set(l, (counts.get(l) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([l]) => l);
}
