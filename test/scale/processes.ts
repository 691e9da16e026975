import { join } from 'node:path';
import { cleanEnv, Server } from '../cli/helpers.js';

/**
 * What the scale tests share: the environment of one Kilde process over the shared Qdrant fake, the
 * fake embedder and a real Redis (tiny word chunks, one extraction worker, no embedding retries),
 * and starting such a process until it says where it listens.
 */
export interface Shared {
  dataDir: string;
  qdrantUrl: string;
  embedBaseUrl: string;
  redisUrl: string;
}

const listening = /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"kilde listening"/;

export function processEnv(shared: Shared, name: string, extra: Record<string, string> = {}) {
  return cleanEnv({
    API_KEY: 'test-key',
    KILDE_DATA_DIR: join(shared.dataDir, name),
    VECTORDB_URI: shared.qdrantUrl,
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_API_BASE_URL: shared.embedBaseUrl,
    EMBEDDING_MODEL: 'fake-embed',
    EMBEDDING_DIM: '16',
    EMBEDDING_MAX_RETRIES: '0',
    EXTRACTION_ENGINE: 'inprocess',
    EXTRACTION_WORKERS: '1',
    CHUNK_SPLIT_BY: 'word',
    CHUNK_SIZE: '8',
    CHUNK_OVERLAP: '0',
    REDIS_URL: shared.redisUrl,
    LOCK_RETRY_MS: '50',
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    ...extra,
  });
}

export async function startProcess(args: string[], env: NodeJS.ProcessEnv) {
  const server = Server.start(args, env);
  const url = (await server.waitFor(listening, 60_000))[1]!;
  return { server, url };
}
