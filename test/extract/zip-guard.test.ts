import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../src/extract/limits.js';
import { checkArchive } from '../../src/extract/zip-guard.js';
import { tempDirs } from '../helpers/temp-dirs.js';
import { writeZip } from '../reliability/hostile-documents.js';
import { DOCS, failure } from './helpers.js';

/*
 * The zip central directory is judged before anything is inflated. The bombs here declare sizes
 * their 1 KiB bodies do not have: had anything been inflated, the error would be a stream shorter
 * than declared, not the limit — so each answer shows the refusal came from the directory alone.
 */
const newDir = tempDirs('kilde-zip-guard-');
const MiB = 1024 * 1024;
const body = Buffer.alloc(1024, 0xff);

describe('checkArchive at the default limits', () => {
  it('refuses one entry declaring 200 MiB in a 1 KiB package (under EXTRACTION_MAX_ARCHIVE_BYTES) by its ratio', async () => {
    const path = join(await newDir(), 'bomb.docx');
    await writeZip(path, [
      { name: '[Content_Types].xml', data: Buffer.from('<Types/>') },
      { name: 'word/document.xml', data: body, declaredSize: 200 * MiB },
    ]);
    const err = await failure(checkArchive(path, DEFAULT_LIMITS));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
    expect(err.message).toMatch(
      /^Document exceeds an extraction limit: a package entry compressed \d+:1, more than 100:1 \(EXTRACTION_MAX_COMPRESSION_RATIO\)$/,
    );
  });

  it('refuses many entries each under the 1 MiB grace of the entry ratio by the ratio of the whole package', async () => {
    const path = join(await newDir(), 'many.xlsx');
    await writeZip(
      path,
      Array.from({ length: 200 }, (_, i) => ({
        name: `xl/worksheets/sheet${i}.xml`,
        data: body,
        declaredSize: MiB - 1,
      })),
    );
    const err = await failure(checkArchive(path, DEFAULT_LIMITS));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
    expect(err.message).toMatch(
      /^Document exceeds an extraction limit: the package declares 200 MiB uncompressed in \d+ KiB, \d+:1, more than 100:1 \(EXTRACTION_MAX_COMPRESSION_RATIO\)$/,
    );
  });

  it('still stops an entry that inflates past what it declares (a lying header)', async () => {
    const path = join(await newDir(), 'liar.docx');
    await writeZip(path, [
      {
        name: 'word/document.xml',
        data: { chunk: Buffer.alloc(64 * 1024, 32), times: 16 },
        declaredSize: 900 * 1024,
      },
    ]);
    const err = await failure(checkArchive(path, DEFAULT_LIMITS));
    expect(err).toMatchObject({ code: 'EXTRACTION_FAILED', statusCode: 422 });
    expect(err.message).toMatch(/^Could not read the zip package: too many bytes in the stream/);
  });

  it('passes every office document of the fixtures', async () => {
    const files = (await readdir(DOCS)).filter((f) => /\.(docx|xlsx|pptx|odt|ods|odp|epub)$/i.test(f));
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) await checkArchive(join(DOCS, f), DEFAULT_LIMITS);
  });
});
