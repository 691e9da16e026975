import { stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { approximateTokenCounter } from './approx-counter.js';
import type { TokenCounter } from './chunker.js';
import { startTokenizerWorker } from './tokenizer-worker.js';

/** The tokenizer named by configuration cannot be used; the message says what to set instead. */
export class TokenizerUnavailableError extends Error {
  override readonly name = 'TokenizerUnavailableError';
}

/**
 * Loads the token counter chunking measures with.
 *
 * - a `tokenizer.json` file, or a directory holding one (e.g. a downloaded model folder): counted by
 *   the Hugging Face `tokenizers` library exactly as the embedding model counts, without the special
 *   tokens the model adds around every input (those are reported as `specialTokens`);
 * - `undefined` or blank: the built-in approximation (see `approximateTokenCounter`), so the offline
 *   default needs no tokenizer file;
 * - anything else (a hub id like `intfloat/multilingual-e5-small`): Kilde never downloads, so this
 *   throws `TokenizerUnavailableError` asking for a local path.
 */
export async function loadTokenCounter(nameOrPath: string | undefined): Promise<TokenCounter> {
  const name = nameOrPath?.trim();
  if (!name) return approximateTokenCounter();
  const file = await locateTokenizerFile(name);
  try {
    return await startTokenizerWorker(file);
  } catch (err) {
    throw new TokenizerUnavailableError(
      `Cannot load tokenizer ${file}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** `file://` URLs, relative and absolute paths; a directory must contain `tokenizer.json`. */
export async function locateTokenizerFile(name: string): Promise<string> {
  const path = resolve(name.startsWith('file://') ? new URL(name).pathname : name);
  const info = await stat(path).catch(() => undefined);
  if (info?.isFile()) return path;
  if (info?.isDirectory()) {
    const inside = join(path, 'tokenizer.json');
    if ((await stat(inside).catch(() => undefined))?.isFile()) return inside;
    throw new TokenizerUnavailableError(`Tokenizer directory ${path} has no tokenizer.json`);
  }
  const looksLikePath = isAbsolute(name) || name.startsWith('.') || name.startsWith('file://');
  throw new TokenizerUnavailableError(
    looksLikePath
      ? `Tokenizer file ${path} does not exist`
      : `Tokenizer "${name}" is not a local path. Kilde runs offline and never downloads tokenizers: ` +
          'set TOKENIZER_MODEL to a local tokenizer.json file or a directory containing one',
  );
}

export interface TokenCounterChoice {
  counter: TokenCounter;
  /** Set when the configured name could not be used and the approximation stands in. */
  warning?: string;
}

/**
 * Chunks are measured with `TOKENIZER_MODEL`, else the `EMBEDDING_MODEL` tokenizer. An explicit
 * `TOKENIZER_MODEL` must load. `EMBEDDING_MODEL` is often a served model's name rather than a local
 * folder, so when it does not name a local tokenizer the approximation is used, with a warning for
 * the start-up log.
 */
export async function chooseTokenCounter(settings: {
  tokenizerModel?: string | undefined;
  embeddingModel?: string | undefined;
}): Promise<TokenCounterChoice> {
  if (settings.tokenizerModel?.trim()) return { counter: await loadTokenCounter(settings.tokenizerModel) };
  const fallback = settings.embeddingModel?.trim();
  if (!fallback) return { counter: approximateTokenCounter() };
  try {
    return { counter: await loadTokenCounter(fallback) };
  } catch (err) {
    if (!(err instanceof TokenizerUnavailableError)) throw err;
    return {
      counter: approximateTokenCounter(),
      warning: `${err.message}; chunk sizes are estimated instead (set TOKENIZER_MODEL to a local tokenizer.json for exact counts)`,
    };
  }
}
