import { existsSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FeatureExtractionPipeline } from '@huggingface/transformers';
import type { Logger } from 'pino';
import { z } from 'zod';
import { KildeError } from '../errors.js';
import { type EmbeddingBackend, InputTooLongError } from './embedding-backend.js';

export interface InprocessOptions {
  /** EMBEDDING_MODEL: a local model directory, or a hub id looked up in the local cache (or downloaded when online). */
  model: string;
  /** EMBEDDING_OFFLINE: never download. */
  offline: boolean;
  /** EMBEDDING_MAX_TOKENS, special tokens included; the model's own limit applies too when smaller. */
  maxTokens: number;
  log: Logger;
}

const vectorsSchema = z.array(z.array(z.number()));

export interface ModelLocation {
  kind: 'directory' | 'hub';
  /** Absolute directory, or the hub id. */
  id: string;
}

/**
 * A value naming a path (absolute, `./…`, `../…`, `~/…`, `file://…`) or an existing directory is a
 * local model directory; anything else is a hub id such as `Xenova/multilingual-e5-small`.
 * A directory that does not exist is a configuration error, named here rather than deep in the loader.
 */
export function locateModel(model: string): ModelLocation {
  if (model.trim() === '') throw new Error('EMBEDDING_MODEL is required for EMBEDDING_PROVIDER=inprocess');
  const path = model.startsWith('file://') ? fileURLToPath(model) : model;
  const looksLikePath = isAbsolute(path) || /^\.{1,2}[\\/]/.test(path) || path.startsWith('~');
  if (!looksLikePath && !existsSync(path)) return { kind: 'hub', id: model };
  const dir = resolve(path);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new Error(
      `EMBEDDING_MODEL=${model}: model directory ${dir} does not exist (it must hold config.json, tokenizer.json and onnx/model.onnx; \`kilde models install NAME\` puts one in place)`,
    );
  }
  return { kind: 'directory', id: dir };
}

/**
 * transformers.js feature extraction (ONNX Runtime on the CPU) with mean pooling and L2
 * normalisation, the pooling sentence-transformers uses for e5/MiniLM-style models. The model loads
 * on first use (or on the readiness probe), not at construction; transformers.js is imported only
 * then, so the other providers never pay for it.
 */
export function createInprocessBackend(o: InprocessOptions): EmbeddingBackend {
  const where = locateModel(o.model);
  let loading: Promise<FeatureExtractionPipeline> | undefined;
  // ONNX Runtime already uses every core for one run; queueing runs keeps latency predictable.
  let queue: Promise<unknown> = Promise.resolve();

  async function load(): Promise<FeatureExtractionPipeline> {
    const { env, pipeline } = await import('@huggingface/transformers');
    env.allowLocalModels = true;
    env.allowRemoteModels = !o.offline;
    const started = Date.now();
    try {
      const extractor = await pipeline('feature-extraction', where.id, {
        local_files_only: o.offline,
        dtype: 'fp32',
      });
      o.log.info({ model: where.id, ms: Date.now() - started }, 'in-process embedding model loaded');
      return extractor;
    } catch (err) {
      const hint =
        where.kind === 'directory'
          ? `from directory ${where.id} (it must hold config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx)`
          : o.offline
            ? `"${where.id}" from the local cache (${env.cacheDir}); EMBEDDING_OFFLINE=true forbids downloading it — set EMBEDDING_MODEL to a local model directory`
            : `"${where.id}"`;
      throw new KildeError(
        'EMBEDDING_FAILED',
        `in-process embedding model could not be loaded ${hint}: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }

  function extractor(): Promise<FeatureExtractionPipeline> {
    loading ??= load();
    // a failed load is retried on the next call instead of being cached forever
    loading.catch(() => {
      loading = undefined;
    });
    return loading;
  }

  async function run(texts: string[], signal: AbortSignal | undefined): Promise<number[][]> {
    const model = await extractor();
    signal?.throwIfAborted();
    const limit = Math.min(o.maxTokens, Number(model.tokenizer.model_max_length) || Infinity);
    texts.forEach((text, i) => {
      const tokens = model.tokenizer.encode(text).length;
      if (tokens > limit) {
        throw new InputTooLongError(i, `${tokens} tokens, the model takes at most ${limit}`);
      }
    });
    const next = queue.then(async () => {
      signal?.throwIfAborted();
      try {
        const output = await model(texts, { pooling: 'mean', normalize: true });
        return vectorsSchema.parse(output.tolist());
      } catch (err) {
        throw new KildeError('EMBEDDING_FAILED', 'in-process embedding failed', { cause: err });
      }
    });
    queue = next.catch(() => undefined);
    return next;
  }

  return {
    embedBatch: run,
    async probe(signal) {
      const [v] = await run(['ping'], signal);
      return v ?? [];
    },
    async close() {
      const pending = loading;
      loading = undefined;
      if (pending) await (await pending.catch(() => undefined))?.dispose();
    },
  };
}
