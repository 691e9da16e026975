import { createReadStream } from 'node:fs';
import { detectLanguagesInWindows, languageWindows } from '../languages.js';

/**
 * A large plain-text or Markdown file read as a stream of pieces instead of one string: the text
 * `readPlain` (text.ts) would return, never held whole. Three passes over the file, each holding
 * one read buffer: the first checks the encoding (UTF-8, else Windows-1252, as `decodeText`),
 * counts the characters and finds the title; the second reads the windows language detection
 * samples (so the languages are exactly those of the whole text); `pieces()` then yields the text.
 */
export interface PlainTextStream {
  /** Characters of the whole text (line endings normalised, trimmed), as `readPlain` would count them. */
  chars: number;
  /** The first `# ` heading, as `readPlain` finds it. */
  title?: string;
  languages: string[];
  /** The text, in consecutive pieces of about one read buffer each. */
  pieces(signal?: AbortSignal): AsyncGenerator<string>;
}

const READ_BYTES = 1 << 20;
/** A line longer than this cannot hold the title's start any more: the search skips it. */
const MAX_TITLE_LINE = 1 << 16;

/** Opens `path` as a stream of normalised text (see `PlainTextStream`). */
export async function openPlainText(path: string, signal?: AbortSignal): Promise<PlainTextStream> {
  let encoding: 'utf-8' | 'windows-1252' = 'utf-8';
  let first: { chars: number; title?: string };
  try {
    first = await survey(path, encoding, signal);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    // Not valid UTF-8 (the decoder's TypeError): the whole file is Windows-1252, as readPlain decides.
    encoding = 'windows-1252';
    first = await survey(path, encoding, signal);
  }
  const windows = languageWindows(first.chars);
  const languages = windows
    ? detectLanguagesInWindows(await readWindows(path, encoding, windows, signal))
    : // A short text (at most 20,000 characters): read whole, as detectLanguages would.
      (await import('../languages.js')).detectLanguages(await readAll(path, encoding, signal));
  return {
    chars: first.chars,
    ...(first.title === undefined ? {} : { title: first.title }),
    languages,
    pieces: (s?: AbortSignal) => normalised(path, encoding, s),
  };
}

/** Pass one: the characters, and the title line. Throws a TypeError on invalid UTF-8 (fatal decoder). */
async function survey(
  path: string,
  encoding: 'utf-8' | 'windows-1252',
  signal: AbortSignal | undefined,
): Promise<{ chars: number; title?: string }> {
  let chars = 0;
  let title: string | undefined;
  // The text since the last line break, for a title search that only ever sees whole lines.
  let line = '';
  for await (const piece of normalised(path, encoding, signal)) {
    chars += piece.length;
    if (title !== undefined) continue;
    const text = line + piece;
    const lastBreak = text.lastIndexOf('\n');
    if (lastBreak >= 0) {
      title = /^#\s+(.+)$/m.exec(text.slice(0, lastBreak))?.[1]?.trim();
      line = text.slice(lastBreak + 1);
    } else {
      line = text;
    }
    if (line.length > MAX_TITLE_LINE && !line.startsWith('#')) line = '';
  }
  title ??= /^#\s+(.+)$/m.exec(line)?.[1]?.trim();
  return title === undefined || title === '' ? { chars } : { chars, title };
}

/** Pass two: the texts of the language windows (sorted, non-overlapping [start, end) ranges). */
async function readWindows(
  path: string,
  encoding: 'utf-8' | 'windows-1252',
  windows: ReadonlyArray<[number, number]>,
  signal: AbortSignal | undefined,
): Promise<string[]> {
  const out = windows.map(() => '');
  let at = 0;
  const last = windows.at(-1)?.[1] ?? 0;
  for await (const piece of normalised(path, encoding, signal)) {
    const end = at + piece.length;
    windows.forEach(([s, e], i) => {
      if (s < end && e > at) out[i] += piece.slice(Math.max(s, at) - at, Math.min(e, end) - at);
    });
    at = end;
    if (at >= last) break;
  }
  return out;
}

async function readAll(path: string, encoding: 'utf-8' | 'windows-1252', signal: AbortSignal | undefined) {
  let text = '';
  for await (const piece of normalised(path, encoding, signal)) text += piece;
  return text;
}

/**
 * The file decoded and normalised as `readPlain` does (`\r\n` and `\r` become `\n`, the whole text
 * trimmed), piece by piece: a `\r` at the end of a piece waits for the next one, and trailing
 * whitespace is held back until text follows it (at the end it is dropped).
 */
async function* normalised(
  path: string,
  encoding: 'utf-8' | 'windows-1252',
  signal: AbortSignal | undefined,
): AsyncGenerator<string> {
  const decoder = new TextDecoder(encoding, { fatal: encoding === 'utf-8', ignoreBOM: false });
  let started = false;
  let held = '';
  const stream = createReadStream(path, { highWaterMark: READ_BYTES });
  try {
    for await (const bytes of stream as AsyncIterable<Buffer>) {
      signal?.throwIfAborted();
      const text = normalise(held + decoder.decode(bytes, { stream: true }));
      const out = split(text);
      held = out.held;
      if (out.emit !== '') {
        const emit = started ? out.emit : out.emit.trimStart();
        if (emit !== '') {
          started = true;
          yield emit;
        } else if (!started) held = held.trimStart();
      }
    }
    const rest = normalise(held + decoder.decode(), true);
    const emit = (started ? rest : rest.trimStart()).trimEnd();
    if (emit !== '') yield emit;
  } finally {
    stream.destroy();
  }

  /** What can be emitted now, and what must wait: a trailing `\r` and trailing whitespace. */
  function split(text: string): { emit: string; held: string } {
    const trailing = /\s*$/.exec(text)?.[0].length ?? 0;
    return { emit: text.slice(0, text.length - trailing), held: text.slice(text.length - trailing) };
  }
}

/** `\r\n` and lone `\r` → `\n`; a final `\r` is kept (it may be the first half of a `\r\n`) unless `last`. */
function normalise(text: string, last = false): string {
  if (!last && text.endsWith('\r')) {
    return `${text.slice(0, -1).replace(/\r\n?/g, '\n')}\r`;
  }
  return text.replace(/\r\n?/g, '\n');
}
