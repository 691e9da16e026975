import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { cosine, hashEmbedding } from '../fakes/hash-embedding.js';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { logSink } from '../helpers/app.js';
import { ManualClock } from '../helpers/clock.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/**
 * LibreChat's `POST /query` over dense search: the distance is pgvector's cosine distance, 1 - cos
 * of the query's and the chunk's embeddings, recomputed here from what the fake embedder was sent.
 */
const SECRET = 'librechat-jwt-secret-0123456789abcdef';
const USER = '6650f1c2a9b3c4d5e6f70811';
const DIM = 64;

function jwt(nowMs: number): string {
  const iat = Math.floor(nowMs / 1000);
  const head = Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url');
  const body = Buffer.from(JSON.stringify({ id: USER, iat, exp: iat + 300 })).toString('base64url');
  return `${head}.${body}.${createHmac('sha256', SECRET).update(`${head}.${body}`).digest('base64url')}`;
}

const newDir = tempDirs('kilde-librechat-dense-');
const clock = new ManualClock();
let embed: FakeEmbeddingsServer;
let app: KildeApp;

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: DIM });
  const config = parseConfig(allSchema, {
    API_KEY: 'test-key',
    KILDE_DATA_DIR: await newDir(),
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: String(DIM),
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    ENABLE_HYBRID_SEARCH: 'false',
    SMALL_COLLECTION_CHUNKS: '0',
    CHUNK_SPLIT_BY: 'token',
    CHUNK_SIZE: '12',
    CHUNK_OVERLAP: '4',
    LIBRECHAT_JWT_SECRET: SECRET,
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log, { clock });
  app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  const boundary = '--------------------------512345678901234567890123';
  const text =
    'Rye bread rests overnight with sourdough.\n\nIncome tax is paid to the municipality.\n\nBicycle lanes are wide in Copenhagen.\n';
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file_id"\r\n\r\nf-dense\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="facts.txt"\r\nContent-Type: text/plain\r\n\r\n${text}\r\n` +
      `--${boundary}--\r\n`,
  );
  const res = await app.inject({
    method: 'POST',
    url: '/embed',
    headers: {
      authorization: `Bearer ${jwt(clock.now())}`,
      accept: 'application/json',
      'content-type': `multipart/form-data; boundary=${boundary}`,
    },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(200);
});

afterAll(async () => {
  await app?.close();
  await embed?.close();
});

describe('POST /query over dense search', () => {
  it("answers pgvector's cosine distance: 1 - cos(query, chunk), smaller first", async () => {
    const before = embed.inputs().length;
    const res = await app.inject({
      method: 'POST',
      url: '/query',
      headers: { authorization: `Bearer ${jwt(clock.now())}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ file_id: 'f-dense', query: 'sourdough rye bread', k: 5 }),
    });
    expect(res.statusCode, res.body).toBe(200);
    const hits = res.json() as [{ page_content: string }, number][];
    expect(hits.length).toBeGreaterThan(1);
    const sent = embed.inputs();
    const queryInput = sent.slice(before).find((t) => t.includes('sourdough rye bread'));
    expect(queryInput).toBeDefined();
    const q = hashEmbedding(queryInput!, DIM);
    for (const [doc, distance] of hits) {
      const docInput = sent.slice(0, before).find((t) => t.includes(doc.page_content));
      expect(docInput, doc.page_content).toBeDefined();
      expect(distance).toBeCloseTo(1 - cosine(q, hashEmbedding(docInput!, DIM)), 5);
    }
    expect(hits[0]![0].page_content).toContain('Rye bread');
    const distances = hits.map((h) => h[1]);
    expect([...distances].sort((a, b) => a - b)).toEqual(distances);
  });

  it('answers the whole file once for RAG_USE_FULL_CONTEXT, the overlap between chunks given once', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/documents/f-dense/context',
      headers: { authorization: `Bearer ${jwt(clock.now())}` },
    });
    expect(res.statusCode, res.body).toBe(200);
    const text = res.json() as string;
    // The chunks overlap by 4 tokens; joined on their character offsets, the text comes back as written.
    expect(text).toBe(
      'facts.txt\nRye bread rests overnight with sourdough.\n\nIncome tax is paid to the municipality.\n\nBicycle lanes are wide in Copenhagen.',
    );
  });
});
