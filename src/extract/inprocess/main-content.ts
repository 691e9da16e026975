import { isProbablyReaderable, Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

/**
 * The article of a web page without its chrome ("Jump to content", language lists, navigation,
 * footers), found by Mozilla's Readability (Firefox Reader View) on a linkedom DOM. Pages that do
 * not look like an article (a bare table, a generated report) are kept whole, as is any page
 * Readability cannot reduce to a substantial article.
 */
export function mainContentHtml(html: string): string {
  try {
    return articleOf(html);
  } catch {
    // A page Readability cannot walk (absurd nesting): converted whole, within the converter's limits.
    return html;
  }
}

function articleOf(html: string): string {
  const { document } = parseHTML(html);
  if (!isProbablyReaderable(document)) return html;
  const article = new Readability(document, { keepClasses: false }).parse();
  const content = article?.content;
  if (!content || (article.textContent ?? '').trim().length < 200) return html;
  // Readability lifts the page title out of the article; it heads the Markdown again.
  const title = article.title?.trim();
  const hasH1 = /<h1[\s>]/i.test(content);
  return plainLinks(title && !hasH1 ? `<h1>${escapeHtml(title)}</h1>${content}` : content);
}

/**
 * Links keep their text and images go, as the converter does elsewhere; inside the infobox tables
 * Readability keeps, they would otherwise come out as `[![](…)](…)` cells.
 */
function plainLinks(html: string): string {
  const { document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`);
  for (const img of [...document.querySelectorAll('img, picture, svg')]) img.remove();
  for (const a of [...document.querySelectorAll('a')]) a.replaceWith(...a.childNodes);
  return document.body.innerHTML;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
