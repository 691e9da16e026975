/**
 * Writes a plain-text PDF (Helvetica, one content stream per page) with generated English prose, for
 * the ingestion benchmark's "large PDF". Hand-rolled because no PDF writer is a dependency; the
 * structure is the minimal valid one (catalog, page tree, font, pages, xref, trailer).
 */
const WORDS =
  'municipal citizens appeal procedure council housing benefit school district waste collection permit application deadline office hours payment reminder tax assessment welfare decision complaint board'.split(
    ' ',
  );

function sentence(seed: number): string {
  const n = 8 + (seed % 9);
  const words = Array.from({ length: n }, (_, i) => WORDS[(seed * 7 + i * 13) % WORDS.length]!);
  return `${words.join(' ')}.`.replace(/^./, (c) => c.toUpperCase());
}

export function writeTextPdf(pages: number, linesPerPage: number): Buffer {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body) - 1 + 1; // object numbers are 1-based
  add('<< /Type /Catalog /Pages 2 0 R >>');
  add(''); // page tree, filled in once the page ids are known
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  add('<< /Title (Generated benchmark document) /Author (Kilde bench) /CreationDate (D:20260101000000Z) >>');
  const kids: number[] = [];
  for (let p = 0; p < pages; p++) {
    const lines = [`Chapter ${p + 1}`];
    for (let l = 1; l < linesPerPage; l++) lines.push(sentence(p * linesPerPage + l));
    const text = lines.map((l) => `(${l.replace(/[()\\]/g, '\\$&')}) Tj T*`).join('\n');
    const stream = `BT /F1 10 Tf 14 TL 50 760 Td\n${text}\nET`;
    const contents = add(`<< /Length ${Buffer.byteLength(stream)} >>\nstream\n${stream}\nendstream`);
    kids.push(
      add(
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${contents} 0 R >>`,
      ),
    );
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;

  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 4 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
