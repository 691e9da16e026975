/**
 * Writes small, valid PDF files for tests: pages of text lines in Helvetica at given sizes, and an
 * optional outline (bookmarks) pointing at pages. Enough structure for pdf.js to read text runs with
 * their font sizes and the outline with its destinations, as it does for real documents.
 */
export interface PdfTextLine {
  text: string;
  size?: number;
}

export interface PdfOutlineItem {
  title: string;
  /** 0-based page index. */
  page: number;
  children?: PdfOutlineItem[];
}

const pdfString = (s: string) => s.replace(/\\/g, '\\\\').replace(/\(/g, '\\(').replace(/\)/g, '\\)');

export function makePdf(pages: PdfTextLine[][], outline: PdfOutlineItem[] = []): Buffer {
  const objects: string[] = [];
  const add = (body: string) => {
    objects.push(body);
    return objects.length;
  };
  const reserve = () => add('');
  const catalog = reserve();
  const pagesId = reserve();
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const pageIds: number[] = [];
  for (const lines of pages) {
    let y = 760;
    const ops = lines.map((l) => {
      const size = l.size ?? 11;
      y -= size * 1.6;
      return `BT /F1 ${size} Tf 72 ${y.toFixed(1)} Td (${pdfString(l.text)}) Tj ET`;
    });
    const stream = ops.join('\n');
    const contents = add(
      `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`,
    );
    pageIds.push(
      add(
        `<< /Type /Page /Parent ${pagesId} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${contents} 0 R >>`,
      ),
    );
  }
  objects[pagesId - 1] =
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pageIds.length} >>`;

  let outlinesRef = '';
  if (outline.length > 0) {
    const root = reserve();
    const items = (nodes: PdfOutlineItem[], parent: number): number[] => {
      const ids = nodes.map(() => reserve());
      nodes.forEach((node, i) => {
        const kids = node.children && node.children.length > 0 ? items(node.children, ids[i]!) : [];
        const links = [
          i > 0 ? `/Prev ${ids[i - 1]} 0 R` : '',
          i < ids.length - 1 ? `/Next ${ids[i + 1]} 0 R` : '',
          kids.length > 0 ? `/First ${kids[0]} 0 R /Last ${kids.at(-1)} 0 R /Count ${kids.length}` : '',
        ].join(' ');
        objects[ids[i]! - 1] =
          `<< /Title (${pdfString(node.title)}) /Parent ${parent} 0 R ${links} /Dest [${pageIds[node.page]} 0 R /XYZ 0 792 0] >>`;
      });
      return ids;
    };
    const top = items(outline, root);
    objects[root - 1] =
      `<< /Type /Outlines /First ${top[0]} 0 R /Last ${top.at(-1)} 0 R /Count ${top.length} >>`;
    outlinesRef = ` /Outlines ${root} 0 R /PageMode /UseOutlines`;
  }
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${pagesId} 0 R${outlinesRef} >>`;

  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
