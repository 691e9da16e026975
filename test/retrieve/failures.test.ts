import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeEmbeddingsServer, startFakeOpenAIEmbeddings } from '../fakes/openai-embeddings.js';
import { type Harness, startIngest } from '../ingest/helpers/harness.js';
import { ingestText } from './helpers/labelled.js';
import { type RetrieveHarness, startRetrieve } from './helpers/retrieve.js';

let embed: FakeEmbeddingsServer;
let ingest: Harness;
const open: RetrieveHarness[] = [];

async function retrieve(env: Record<string, string> = {}) {
  const r = await startRetrieve({
    KILDE_DATA_DIR: ingest.dataDir,
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '64',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
    EMBEDDING_MAX_RETRIES: '0',
    ...env,
  });
  open.push(r);
  return r;
}

beforeAll(async () => {
  embed = await startFakeOpenAIEmbeddings({ dim: 64 });
  ingest = await startIngest({
    EMBEDDING_PROVIDER: 'http-compat',
    EMBEDDING_MODEL: 'hash',
    EMBEDDING_DIM: '64',
    EMBEDDING_API_BASE_URL: embed.baseUrl,
  });
  await ingestText(ingest, 'owls', 'kb', 'Owls hunt at night and sleep during the day.');
  await ingest.settle(); // the retrieval apps open their own index on the data directory
});

afterAll(async () => {
  for (const r of open) await r.close();
  await ingest.close();
  await embed.close();
});

describe('POST /search when the embedding endpoint fails', () => {
  it('answers 502 EMBEDDING_FAILED without naming the internal endpoint', async () => {
    const r = await retrieve();
    embed.always = { kind: 'status', status: 500 };
    try {
      const res = await fetch(`${r.url}/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer test-key' },
        body: JSON.stringify({ queries: ['owls'], collection_names: ['kb'] }),
      });
      const text = await res.text();
      expect(res.status).toBe(502);
      expect(JSON.parse(text)).toMatchObject({ code: 'EMBEDDING_FAILED' });
      expect(text).not.toContain(new URL(embed.baseUrl).host);
      // The operator still sees where it failed.
      expect(r.logs.text()).toContain(new URL(embed.baseUrl).host);
    } finally {
      embed.always = undefined;
    }
  });

  it('keeps the detail for DEBUG=true', async () => {
    const r = await retrieve({ DEBUG: 'true' });
    embed.always = { kind: 'status', status: 500 };
    try {
      const { status, json } = await r.search({ queries: ['owls'], collection_names: ['kb'] });
      expect(status).toBe(502);
      expect(String(json.debug)).toContain(new URL(embed.baseUrl).host);
    } finally {
      embed.always = undefined;
    }
  });
});

describe('POST /search with messages but no query to run', () => {
  it('rejects messages without a user turn (and no queries) with 422, not an empty outer list', async () => {
    const r = await retrieve();
    const { status, json } = await r.search({
      messages: [
        { role: 'system', content: 'You are helpful.' },
        { role: 'assistant', content: 'Owls?' },
      ],
      collection_names: ['kb'],
    });
    expect(status).toBe(422);
    expect(json.code).toBe('INVALID_REQUEST');
  });

  it('accepts raw OpenAI chat messages: an assistant tool call has content null', async () => {
    const r = await retrieve();
    const { status, json } = await r.search({
      messages: [
        { role: 'user', content: 'Look up owls' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'nothing' },
        { role: 'user', content: 'When do owls hunt?' },
      ],
      collection_names: ['kb'],
    });
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.metadatas[0][0].file_id).toBe('owls');
  });

  it('still answers a user turn with one list', async () => {
    const r = await retrieve();
    const { status, json } = await r.search({
      messages: [{ role: 'user', content: 'When do owls hunt?' }],
      collection_names: ['kb'],
    });
    expect(status).toBe(200);
    expect(json.documents).toHaveLength(1);
    expect(json.metadatas[0][0].file_id).toBe('owls');
  });
});
