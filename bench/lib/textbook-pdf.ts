import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

/*
 * The Danish citizenship textbook as the PDFs a user would upload: each chapter's Markdown made a
 * plain HTML page (headings as <h1>–<h6>, paragraphs, bullet lists; figure blocks left out) and
 * printed to PDF by LibreOffice (`soffice`), which sets headings in larger type, writes them as the
 * outline and embeds its fonts, as office PDFs do. For `bench:quality --pdf`.
 */

const run = promisify(execFile);

const htmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** One chapter's Markdown as an HTML page. */
export function chapterHtml(markdown: string, title: string): string {
  const out: string[] = [];
  let paragraph: string[] = [];
  let items: string[] = [];
  let fenced = false;
  const flush = () => {
    if (paragraph.length > 0) out.push(`<p>${htmlText(paragraph.join(' '))}</p>`);
    if (items.length > 0) out.push(`<ul>${items.map((i) => `<li>${htmlText(i)}</li>`).join('')}</ul>`);
    paragraph = [];
    items = [];
  };
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) {
      fenced = !fenced;
      flush();
      continue;
    }
    if (fenced) continue;
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^[*-]\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      const level = heading[1]!.length;
      out.push(`<h${level}>${htmlText(heading[2]!.trim())}</h${level}>`);
    } else if (line.trim() === '' || line.trim() === '---') flush();
    else if (item) {
      if (paragraph.length > 0) out.push(`<p>${htmlText(paragraph.join(' '))}</p>`);
      paragraph = [];
      items.push(item[1]!);
    } else paragraph.push(line.trim());
  }
  flush();
  return `<!doctype html><html lang="da"><head><meta charset="utf-8"><title>${htmlText(title)}</title></head><body>\n${out.join('\n')}\n</body></html>\n`;
}

/**
 * Writes `<name>.pdf` for each chapter `<name>.md` of `corpus` into `dir`; undefined when
 * LibreOffice is not installed.
 */
export async function textbookPdfs(
  corpus: string,
  names: readonly string[],
  dir: string,
): Promise<string[] | undefined> {
  try {
    await run('soffice', ['--version']);
  } catch {
    return undefined;
  }
  const html = join(dir, 'html');
  await mkdir(html, { recursive: true });
  const pages: string[] = [];
  for (const name of names) {
    const page = join(html, name.replace(/\.md$/, '.html'));
    await writeFile(page, chapterHtml(await readFile(join(corpus, name), 'utf8'), name));
    pages.push(page);
  }
  // Opened in Writer (not Writer/Web, whose PDF export loses the first heading and the outline levels).
  const args = ['--headless', '--infilter=HTML (StarWriter)', '--convert-to', 'pdf:writer_pdf_Export'];
  await run('soffice', [...args, '--outdir', dir, ...pages], { maxBuffer: 16 * 1024 * 1024 });
  return names.map((n) => n.replace(/\.md$/, '.pdf'));
}
