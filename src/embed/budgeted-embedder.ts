import type { Logger } from 'pino';
import type { TokenCounter } from '../chunk/chunker.js';
import { KildeError } from '../errors.js';
import type { DenseEmbedder } from './dense.js';
import { type EmbeddingBackend, InputTooLongError } from './embedding-backend.js';
import { countAll, halve, poolVectors, splitToBudget, textBudget, type Window } from './token-budget.js';

export interface BudgetedEmbedderOptions {
  provider: string;
  model: string;
  dim: number;
  prefixDoc: string;
  prefixQuery: string;
  batchSize: number;
  maxTokens: number;
  counter: TokenCounter;
  log: Logger;
}

/**
 * How often one window may be halved after the backend refused it as too long. Windows are already cut
 * to EMBEDDING_MAX_TOKENS by the counter, so a refusal means the counter and the model disagree by a
 * small factor; 6 halvings (64 pieces) cover any sane disagreement and bound the extra requests.
 */
const MAX_HALVINGS = 6;

interface Piece extends Window {
  owner: number;
}

/**
 * The one `DenseEmbedder` over any backend: applies the prefixes, splits inputs longer than the
 * token budget into windows and pools them (see `token-budget.ts`), sends at most `batchSize` texts per
 * backend call, and checks that every vector has `dim` components.
 */
export function createBudgetedEmbedder(backend: EmbeddingBackend, o: BudgetedEmbedderOptions): DenseEmbedder {
  const { counter, log } = o;
  const budgets = new Map<string, number>();
  /** The text budget of a prefix, counted once (it is the same string every call). */
  const budgetFor = (prefix: string): number => {
    let b = budgets.get(prefix);
    if (b === undefined) {
      b = textBudget(o.maxTokens, prefix, counter);
      budgets.set(prefix, b);
    }
    return b;
  };

  function fail(message: string, detail?: string): KildeError {
    return new KildeError('EMBEDDING_FAILED', message, detail === undefined ? undefined : { detail });
  }

  function checkVectors(vectors: number[][], expected: number): void {
    if (vectors.length !== expected) {
      throw fail(`embedding backend returned ${vectors.length} vectors for ${expected} inputs`);
    }
    for (const v of vectors) {
      if (v.length !== o.dim) {
        throw fail(
          `embedding model "${o.model}" returned a vector of ${v.length} dimensions but EMBEDDING_DIM is ${o.dim}`,
        );
      }
      if (!v.every(Number.isFinite)) throw fail('embedding backend returned a vector with non-finite values');
    }
  }

  /** Embeds windows (one backend call); a window the model refuses as too long is halved and pooled. */
  async function embedWindows(
    windows: Window[],
    prefix: string,
    signal: AbortSignal | undefined,
    depth: number,
  ): Promise<number[][]> {
    try {
      const vectors = await backend.embedBatch(
        windows.map((w) => prefix + w.text),
        signal,
      );
      checkVectors(vectors, windows.length);
      return vectors;
    } catch (err) {
      if (!(err instanceof InputTooLongError)) throw err;
      const refused = windows[err.index];
      const halves = refused === undefined ? undefined : halve(refused.text, counter);
      if (refused === undefined || halves === undefined || depth >= MAX_HALVINGS) {
        throw fail(
          `embedding model "${o.model}" refuses an input of ${refused?.text.length ?? '?'} characters as too long and it cannot be split further`,
          err.message,
        );
      }
      log.warn(
        { chars: refused.text.length, countedTokens: refused.tokens, reason: err.message },
        'embedding backend refused an input as too long; splitting it in two and pooling',
      );
      const parts = await embedWindows(halves, prefix, signal, depth + 1);
      const pooled = poolVectors(parts, [halves[0].tokens, halves[1].tokens]);
      const others = windows.filter((_, i) => i !== err.index);
      const rest = others.length > 0 ? await embedWindows(others, prefix, signal, depth) : [];
      rest.splice(err.index, 0, pooled);
      return rest;
    }
  }

  async function embedAll(texts: readonly string[], prefix: string, signal?: AbortSignal) {
    if (texts.length === 0) return [];
    const budget = budgetFor(prefix);
    const counts = await countAll(counter, texts);
    const pieces: Piece[] = [];
    texts.forEach((text, owner) => {
      const windows = splitToBudget(text, budget, counter, counts[owner]);
      if (windows.length > 1) {
        log.debug(
          { chars: text.length, windows: windows.length, budget },
          'input longer than EMBEDDING_MAX_TOKENS: embedding it in windows and pooling',
        );
      }
      for (const w of windows) pieces.push({ ...w, owner });
    });

    const vectors: number[][] = [];
    for (let i = 0; i < pieces.length; i += o.batchSize) {
      signal?.throwIfAborted();
      const batch = pieces.slice(i, i + o.batchSize);
      vectors.push(...(await embedWindows(batch, prefix, signal, 0)));
    }

    const byOwner = texts.map(() => ({ vectors: [] as number[][], weights: [] as number[] }));
    pieces.forEach((p, i) => {
      const slot = byOwner[p.owner];
      const v = vectors[i];
      if (slot === undefined || v === undefined) return;
      slot.vectors.push(v);
      slot.weights.push(p.tokens);
    });
    // a single window keeps the backend's vector as is; several windows are pooled
    return byOwner.map((s) =>
      s.vectors.length === 1 ? (s.vectors[0] ?? []) : poolVectors(s.vectors, s.weights),
    );
  }

  return {
    provider: o.provider,
    model: o.model,
    dim: o.dim,
    embedDocuments: (texts, signal) => embedAll(texts, o.prefixDoc, signal),
    async embedQuery(text, signal) {
      const [v] = await embedAll([text], o.prefixQuery, signal);
      if (v === undefined) throw fail('embedding backend returned no vector for the query');
      return v;
    },
    async probe(signal) {
      const v = await backend.probe(signal);
      checkVectors([v], 1);
    },
    async close() {
      await backend.close?.();
    },
  };
}
