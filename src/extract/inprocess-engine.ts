import { KildeError } from '../http/errors.js';
import { extractionFailed, reasonOf, toDocument } from './document.js';
import type { ExtractedDocument, ExtractOptions, Extractor, SourceFile } from './extractor.js';
import { detectFileType, type FileKind } from './file-type.js';
import type { ReadContent } from './inprocess/content.js';
import { readDocx } from './inprocess/docx.js';
import { readHtml } from './inprocess/html.js';
import { readOffice } from './inprocess/office.js';
import { readPdf } from './inprocess/pdf.js';
import { readDelimited, readPlain } from './inprocess/text.js';

const READERS: Record<FileKind, (path: string) => Promise<ReadContent>> = {
  pdf: readPdf,
  docx: readDocx,
  pptx: (p) => readOffice(p, 'pptx'),
  xlsx: (p) => readOffice(p, 'xlsx'),
  odt: (p) => readOffice(p, 'odt'),
  odp: (p) => readOffice(p, 'odp'),
  ods: (p) => readOffice(p, 'ods'),
  rtf: (p) => readOffice(p, 'rtf'),
  epub: (p) => readOffice(p, 'epub'),
  html: readHtml,
  markdown: readPlain,
  text: readPlain,
  csv: (p) => readDelimited(p, ','),
  tsv: (p) => readDelimited(p, '\t'),
};

export interface InprocessOptions {
  /** Engine name reported in errors and on the extractor. */
  name: string;
  /** Restricts the accepted kinds (`pdf-inprocess`); all kinds when absent. */
  only?: readonly FileKind[];
}

/** The pure-JavaScript engine: type sniffing, one reader per format, language detection. */
export function createInprocessExtractor(opts: InprocessOptions = { name: 'inprocess' }): Extractor {
  return {
    name: opts.name,
    acceptsProfile: false,
    async extract(file: SourceFile, options?: ExtractOptions): Promise<ExtractedDocument[]> {
      options?.signal?.throwIfAborted();
      const type = await detectFileType(file.path, file.filename, file.mimeType);
      if (type.kind === undefined) {
        throw extractionFailed(
          type.claimed
            ? `File content does not match its type: named or sent as ${type.claimed}, but it is not one (corrupt or mislabelled)`
            : `Unsupported file type: ${type.mime}`,
        );
      }
      if (opts.only && !opts.only.includes(type.kind)) {
        throw extractionFailed(
          `Unsupported file type: ${type.mime} (the ${opts.name} engine accepts ${opts.only.join(', ').toUpperCase()} only)`,
        );
      }
      let content: ReadContent;
      try {
        content = await READERS[type.kind](file.path);
      } catch (err) {
        if (err instanceof KildeError) throw err;
        throw extractionFailed(
          `Could not extract ${type.kind.toUpperCase()} file: ${reasonOf(err)}`,
          422,
          err,
        );
      }
      options?.signal?.throwIfAborted();
      return [toDocument(content, type.mime)];
    },
  };
}
