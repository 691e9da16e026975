import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPlain } from '../../src/extract/inprocess/text.js';
import { openPlainText } from '../../src/extract/inprocess/text-stream.js';
import { detectLanguages } from '../../src/extract/languages.js';
import { DANISH_CORPUS } from '../fixtures/index.js';

/**
 * The streamed reader of large plain-text files gives, piece by piece, exactly what `readPlain`
 * gives whole: the same text (line endings normalised, trimmed), title and languages.
 */
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kilde-text-stream-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function streamed(path: string) {
  const s = await openPlainText(path);
  let text = '';
  let pieces = 0;
  for await (const p of s.pieces()) {
    text += p;
    pieces += 1;
  }
  return { ...s, text, pieces };
}

async function expectSameAsWhole(name: string, content: string | Buffer) {
  const path = join(dir, name);
  await writeFile(path, content);
  const whole = await readPlain(path);
  const got = await streamed(path);
  expect(got.text).toBe(whole.text);
  expect(got.chars).toBe(whole.text.length);
  expect(got.title).toBe(whole.metadata.title);
  expect(got.languages).toEqual(detectLanguages(whole.text));
  return got;
}

describe('openPlainText', () => {
  it('streams a multi-megabyte Markdown text in pieces, identical to the whole read', async () => {
    const chapters = (await readdir(DANISH_CORPUS)).filter((f) => f.endsWith('.md')).sort();
    const parts = await Promise.all(chapters.map((f) => readFile(join(DANISH_CORPUS, f), 'utf8')));
    // Windows line endings, leading and trailing blank space: normalised as readPlain does.
    let text = `\n\n  \r\n${parts.join('\r\n\r\n')}`;
    while (Buffer.byteLength(text) < 3 * 1024 * 1024) text += `\r\n${parts.join('\r\n')}`;
    const got = await expectSameAsWhole('large.md', `${text} \r\n\t\n`);
    expect(got.pieces).toBeGreaterThan(2);
    expect(got.languages).toEqual(['da']);
    expect(got.title).toBeDefined();
  });

  it('falls back to Windows-1252 as a whole read does, and keeps a \\r\\n split across reads', async () => {
    // 0xF8 0xE5 (øå in Windows-1252) are invalid UTF-8. 17-byte lines: the first 1 MiB read
    // (1,048,576 = 61,681 × 17 − 1) ends between a \r and its \n.
    const line = Buffer.from('Rødgrød på bor.\r\n', 'latin1');
    expect(line.length).toBe(17);
    const big = Buffer.concat(Array.from({ length: 70_000 }, () => line));
    const got = await expectSameAsWhole('legacy.txt', big);
    expect(got.text.includes('\r')).toBe(false);
    expect(got.text.startsWith('Rødgrød')).toBe(true);
  });

  it('agrees on short and odd texts: empty, whitespace only, a title late, CR line endings', async () => {
    await expectSameAsWhole('empty.txt', '');
    await expectSameAsWhole('blank.txt', ' \r\n\t\n ');
    await expectSameAsWhole('short.md', 'Intro line\r\r# The title\rBody text here.\r');
    const late = `${'word '.repeat(300_000)}\n# Late title\n${'more text '.repeat(10)}`;
    const got = await expectSameAsWhole('late.md', late);
    expect(got.title).toBe('Late title');
  });
});
