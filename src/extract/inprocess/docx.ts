import { readFile } from 'node:fs/promises';
import mammoth from 'mammoth';
import type { ExtractionLimits } from '../limits.js';
import { readCoreProperties } from '../ooxml-core.js';
import type { ReadContent } from './content.js';
import { htmlToTidyMarkdown } from './html-markdown.js';

/** Word's Title/Subtitle paragraph styles are headings for the breadcrumb; mammoth maps only Heading N. */
const STYLE_MAP = ["p[style-name='Title'] => h1:fresh", "p[style-name='Subtitle'] => h2:fresh"];

/** Images are dropped before they are base64-encoded: they carry no text and can be large. */
const noImages = mammoth.images.imgElement(async () => ({ src: '' }));

/** DOCX → semantic HTML (mammoth, which also reads text boxes) → Markdown with headings and GFM tables. */
export async function readDocx(path: string, limits: ExtractionLimits): Promise<ReadContent> {
  const buffer = await readFile(path);
  const { value: html } = await mammoth.convertToHtml(
    { buffer },
    { styleMap: STYLE_MAP, convertImage: noImages },
  );
  return { text: htmlToTidyMarkdown(html, limits), metadata: readCoreProperties(new Uint8Array(buffer)) };
}
