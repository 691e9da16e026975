import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeTextPdf } from '../text-pdf.js';
import { benchData, FIXTURE_DOCUMENTS } from './data.js';

export interface IngestSet {
  key: 'small' | 'mixed' | 'pdf';
  name: string;
  files: string[];
  /** Pages of the PDFs in the set (the generated one; the fixtures' are counted by the sides). */
  pages?: number;
}

/**
 * The file sets the ingestion comparisons share (bench:vs-langchain, bench:vs-platforms): small
 * files (`files` SciFact abstracts as .txt), mixed real documents (the PDF and DOCX fixtures and the
 * Danish textbook's Markdown chapters: 26 files), one large generated PDF of `pages` pages. Written
 * under `work`; only the sets `keys` names.
 */
export async function writeIngestSets(
  work: string,
  opts: { files: number; pages: number; keys: string[] },
): Promise<IngestSet[]> {
  const chosen = new Set(opts.keys);
  const sets: IngestSet[] = [];
  if (chosen.has('small')) {
    const small = join(work, 'small');
    await mkdir(small, { recursive: true });
    const files: string[] = [];
    for (const line of (await readFile(benchData('scifact', 'corpus.jsonl'), 'utf8')).split('\n')) {
      if (files.length >= opts.files || line.trim() === '') continue;
      const row = JSON.parse(line) as { _id: string; title: string; text: string };
      const path = join(small, `${row._id}.txt`);
      await writeFile(path, `${row.title}\n\n${row.text}\n`);
      files.push(path);
    }
    sets.push({ key: 'small', name: `small .txt ×${files.length}`, files });
  }
  if (chosen.has('mixed')) {
    const danish = benchData('da-citizenship', 'corpus');
    const fixtures = (await readdir(FIXTURE_DOCUMENTS))
      .filter((f) => /\.(pdf|docx)$/.test(f))
      .map((f) => join(FIXTURE_DOCUMENTS, f));
    const chapters = (await readdir(danish)).filter((f) => f.endsWith('.md')).map((f) => join(danish, f));
    const files = [...fixtures, ...chapters];
    sets.push({ key: 'mixed', name: `mixed ×${files.length}`, files });
  }
  if (chosen.has('pdf')) {
    const pdf = join(work, 'large.pdf');
    await writeFile(pdf, writeTextPdf(opts.pages, 45));
    sets.push({ key: 'pdf', name: `pdf ${opts.pages} pages`, files: [pdf], pages: opts.pages });
  }
  return sets;
}
