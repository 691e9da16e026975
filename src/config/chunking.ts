import { int, oneOf } from './fields.js';
import { ConfigError } from './parse.js';

export const CHUNK_MODES = ['token', 'markdown', 'word', 'sentence', 'passage'] as const;
export type ChunkMode = (typeof CHUNK_MODES)[number];

export const chunkingPiece = {
  CHUNK_SPLIT_BY: oneOf(
    CHUNK_MODES,
    'token',
    'How documents are split: `token` (embedding-model tokens), `markdown` (heading hierarchy first, breadcrumb kept, sections packed up to `CHUNK_SIZE` tokens), `word`, `sentence` or `passage` (blank-line paragraphs).',
  ),
  CHUNK_SIZE: int(
    400,
    'Chunk length: tokens in `token`/`markdown` mode, else words, sentences or passages. Chunks never exceed `EMBEDDING_MAX_TOKENS` once the document prefix is added.',
    { min: 1 },
  ),
  CHUNK_OVERLAP: int(
    80,
    'Overlap between consecutive chunks, in the same unit; must be below `CHUNK_SIZE`.',
    {
      min: 0,
    },
  ),
};

export interface ChunkingSettings {
  mode: ChunkMode;
  size: number;
  overlap: number;
}

/**
 * The cross-field rule (overlap below size) lives here rather than in a zod refinement, because
 * `kilde serve all` merges schema shapes and would drop an object-level refinement.
 */
export function chunkingSettings(config: {
  CHUNK_SPLIT_BY: ChunkMode;
  CHUNK_SIZE: number;
  CHUNK_OVERLAP: number;
}): ChunkingSettings {
  if (config.CHUNK_OVERLAP >= config.CHUNK_SIZE) {
    throw new ConfigError(
      `Configuration error: CHUNK_OVERLAP must be below CHUNK_SIZE (got ${config.CHUNK_OVERLAP} >= ${config.CHUNK_SIZE})`,
    );
  }
  return { mode: config.CHUNK_SPLIT_BY, size: config.CHUNK_SIZE, overlap: config.CHUNK_OVERLAP };
}
