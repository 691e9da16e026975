import { createCanvas } from '@napi-rs/canvas';
import { writeZip } from '../reliability/hostile-documents.js';

/*
 * Word files the tests build themselves: text-box flowcharts, pasted pictures of given display
 * sizes, header logos. The XML is what Word writes (DrawingML in `mc:AlternateContent` with a VML
 * fallback for text boxes, `wp:inline`/`wp:anchor` frames with `wp:extent`), valid enough for
 * LibreOffice to open.
 */

const NS = [
  'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"',
  'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"',
  'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"',
  'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"',
  'xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"',
  'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"',
  'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"',
  'xmlns:v="urn:schemas-microsoft-com:vml"',
  'mc:Ignorable="wps"',
].join(' ');

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

let ids = 1;

/** A paragraph of text (optionally a heading: `Heading1`…). */
export function paragraph(text: string, style?: string): string {
  const pPr = style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : '';
  return `<w:p>${pPr}<w:r><w:t xml:space="preserve">${esc(text)}</w:t></w:r></w:p>`;
}

/** A paragraph holding drawings (text boxes, connectors, pictures) as its runs. */
export function drawingParagraph(...runs: string[]): string {
  return `<w:p>${runs.join('')}</w:p>`;
}

function anchor(x: number, y: number, cx: number, cy: number, graphic: string): string {
  const id = ids++;
  return `<wp:anchor distT="0" distB="0" distL="0" distR="0" simplePos="0" relativeHeight="${id}" behindDoc="0" locked="0" layoutInCell="1" allowOverlap="1"><wp:simplePos x="0" y="0"/><wp:positionH relativeFrom="page"><wp:posOffset>${x}</wp:posOffset></wp:positionH><wp:positionV relativeFrom="page"><wp:posOffset>${y}</wp:posOffset></wp:positionV><wp:extent cx="${cx}" cy="${cy}"/><wp:effectExtent l="0" t="0" r="0" b="0"/><wp:wrapNone/><wp:docPr id="${id}" name="Shape ${id}"/><wp:cNvGraphicFramePr/><a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">${graphic}</a:graphicData></a:graphic></wp:anchor>`;
}

/** A text box (a rectangle with text) at page position `x`, `y` (EMU), with a VML fallback copy. */
export function textBox(label: string, x: number, y: number, cx = 1_600_000, cy = 500_000): string {
  const text = `<w:txbxContent><w:p><w:r><w:t xml:space="preserve">${esc(label)}</w:t></w:r></w:p></w:txbxContent>`;
  const shape = `<wps:wsp><wps:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="${cx}" cy="${cy}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></wps:spPr><wps:txbx>${text}</wps:txbx><wps:bodyPr/></wps:wsp>`;
  const vml = `<w:pict><v:rect style="position:absolute;margin-left:${x / 12700}pt;margin-top:${y / 12700}pt;width:${cx / 12700}pt;height:${cy / 12700}pt"><v:textbox>${text}</v:textbox></v:rect></w:pict>`;
  return `<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing>${anchor(x, y, cx, cy, shape)}</w:drawing></mc:Choice><mc:Fallback>${vml}</mc:Fallback></mc:AlternateContent></w:r>`;
}

/** A connector (an arrow, a shape without text) from one point to another. */
export function connector(x: number, y: number, cx: number, cy: number): string {
  const shape = `<wps:wsp><wps:cNvCnPr/><wps:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="${cx}" cy="${cy}"/></a:xfrm><a:prstGeom prst="straightConnector1"><a:avLst/></a:prstGeom><a:ln><a:tailEnd type="triangle"/></a:ln></wps:spPr><wps:bodyPr/></wps:wsp>`;
  return `<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing>${anchor(x, y, cx, cy, shape)}</w:drawing></mc:Choice><mc:Fallback><w:pict><v:line/></w:pict></mc:Fallback></mc:AlternateContent></w:r>`;
}

/** A picture displayed at `cx`×`cy` EMU, in line with the text; `rel` names its image relationship. */
export function picture(rel: string, cx: number, cy: number): string {
  const id = ids++;
  return `<w:r><w:drawing><wp:inline distT="0" distB="0" distL="0" distR="0"><wp:extent cx="${cx}" cy="${cy}"/><wp:docPr id="${id}" name="Picture ${id}"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="${id}" name="image.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:embed="${rel}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="${cx}" cy="${cy}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`;
}

export interface TestDocx {
  /** Body XML: paragraphs and tables. */
  body: string;
  /** Images the body refers to (`rId` → PNG). */
  images?: Record<string, Uint8Array>;
  /** A header part (e.g. with a logo picture) and the images it refers to. */
  header?: { body: string; images: Record<string, Uint8Array> };
}

/** Writes a DOCX package: content types, relationships, the main part, an optional header and media. */
export async function writeTestDocx(path: string, doc: TestDocx): Promise<void> {
  const utf8 = (s: string) => Buffer.from(s, 'utf8');
  const rels = (images: Record<string, Uint8Array>, extra = '') =>
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${Object.keys(
      images,
    )
      .map(
        (id) =>
          `<Relationship Id="${id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/${id}.png"/>`,
      )
      .join('')}${extra}</Relationships>`;
  const headerRel = doc.header
    ? '<Relationship Id="rIdHeader1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/header" Target="header1.xml"/>'
    : '';
  const sectPr = `<w:sectPr>${doc.header ? '<w:headerReference w:type="default" r:id="rIdHeader1"/>' : ''}<w:pgSz w:w="12240" w:h="15840"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="720" w:footer="720" w:gutter="0"/></w:sectPr>`;
  const entries = [
    {
      name: '[Content_Types].xml',
      data: utf8(
        `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>${doc.header ? '<Override PartName="/word/header1.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.header+xml"/>' : ''}</Types>`,
      ),
    },
    {
      name: '_rels/.rels',
      data: utf8(
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
      ),
    },
    {
      name: 'word/document.xml',
      data: utf8(
        `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ${NS}><w:body>${doc.body}${sectPr}</w:body></w:document>`,
      ),
    },
    { name: 'word/_rels/document.xml.rels', data: utf8(rels(doc.images ?? {}, headerRel)) },
    ...Object.entries(doc.images ?? {}).map(([id, png]) => ({ name: `word/media/${id}.png`, data: png })),
  ];
  if (doc.header) {
    entries.push(
      {
        name: 'word/header1.xml',
        data: utf8(
          `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:hdr ${NS}>${doc.header.body}</w:hdr>`,
        ),
      },
      { name: 'word/_rels/header1.xml.rels', data: utf8(rels(doc.header.images)) },
      ...Object.entries(doc.header.images).map(([id, png]) => ({ name: `word/media/${id}.png`, data: png })),
    );
  }
  await writeZip(path, entries);
}

/** 914,400 EMU to the inch. */
export const INCH = 914_400;

/**
 * A flowchart of `labels.length` text boxes in a column joined by connectors, under a one-line
 * caption: the "vector flowchart" the router sends to the diagram engine (with 12 labels: 12 text
 * boxes + 11 connectors = 23 shapes, many more words in the boxes than in the body).
 */
export function flowchartBody(labels: readonly string[], caption = 'Proces'): string {
  const runs: string[] = [];
  labels.forEach((label, i) => {
    const y = INCH + i * 700_000;
    runs.push(textBox(label, 2 * INCH, y));
    if (i + 1 < labels.length) runs.push(connector(2 * INCH + 800_000, y + 500_000, 0, 200_000));
  });
  return paragraph(caption) + drawingParagraph(...runs);
}

/** A PNG of a small process diagram (boxes, arrows, labels drawn as pixels). */
export function diagramPng(labels: readonly string[], width = 800, height = 600): Uint8Array {
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, width, height);
  ctx.strokeStyle = '#000000';
  ctx.fillStyle = '#000000';
  ctx.font = '20px sans-serif';
  const step = height / labels.length;
  labels.forEach((label, i) => {
    const y = i * step + 10;
    ctx.strokeRect(200, y, 400, step - 40);
    ctx.fillText(label, 220, y + (step - 40) / 2 + 6);
    if (i + 1 < labels.length) {
      ctx.beginPath();
      ctx.moveTo(400, y + step - 40);
      ctx.lineTo(400, y + step + 10);
      ctx.stroke();
    }
  });
  return new Uint8Array(canvas.toBuffer('image/png'));
}
