import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/parse.js';
import { allSchema } from '../../src/embedded/all-config.js';
import { composeAll } from '../../src/embedded/compose.js';
import { buildApp, type KildeApp, startParts } from '../../src/http/app.js';
import { createLogger } from '../../src/http/logger.js';
import { AUTH, logSink } from '../helpers/app.js';
import { multipartBody } from '../ingest/helpers/harness.js';

/**
 * `POST /retrieval` accepts every body Dify itself sends (issue #30): nulls where its models dump
 * nothing, `top_k` 0, an empty query, the `or` of its automatic metadata filtering over its own
 * field names and operators. A query that matches nothing answers no records, while `POST /search`
 * keeps answering a small collection's opening chunks (Open WebUI's "summarise this file").
 * `kilde serve all` on LanceDB, lexical search, the small-collection fallback at its default.
 */
const DOCS: [string, string, string][] = [
  ['bread', 'guides/bread.md', '# Rye bread\n\nDanish rye bread is made with sourdough and rests overnight.'],
  ['tax', 'guides/tax.md', '# Taxes\n\nIncome tax in Denmark is high; municipal and state tax are paid.'],
  ['bikes', 'notes/bikes.md', '# Cycling\n\nBicycle lanes in Copenhagen are wide and busy all year.'],
];

let app: KildeApp;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'kilde-dify-bodies-'));
  const config = parseConfig(allSchema, {
    API_KEY: 'test-key',
    KILDE_DATA_DIR: dataDir,
    EMBEDDING_PROVIDER: 'none',
    CHUNK_SPLIT_BY: 'markdown',
  });
  const log = createLogger({ DEBUG: false, LOG_LEVEL_APP: 'warn' }, logSink().stream);
  const all = await composeAll(config, log);
  app = await buildApp(config, { logger: log, parts: all.parts });
  await startParts(all.parts);
  for (const [id, name, content] of DOCS) {
    const { body, headers } = multipartBody(
      { file_id: id, filename: name, collection_name: 'kb', user_id: 'u1' },
      { name, content, type: 'text/markdown' },
    );
    const res = await app.inject({
      method: 'PUT',
      url: '/api/v1/ingest',
      headers: { ...AUTH, ...headers },
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
  }
});

afterAll(async () => {
  await app?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function retrieval(body: Record<string, unknown>) {
  const res = await app.inject({ method: 'POST', url: '/retrieval', headers: AUTH, payload: body });
  // biome-ignore lint/suspicious/noExplicitAny: the assertions check the shape
  return { status: res.statusCode, json: res.json() as any };
}

const ask = (extra: Record<string, unknown> = {}) => ({
  knowledge_id: 'kb',
  query: 'rye bread',
  retrieval_setting: { top_k: 3, score_threshold: 0 },
  ...extra,
});
const files = (json: { records: { metadata: { file_id: string } }[] }) =>
  [...new Set(json.records.map((r) => r.metadata.file_id))].sort();

describe("POST /retrieval: the bodies Dify's own code builds", () => {
  it('accepts null conditions, a null logical_operator and a null metadata_condition', async () => {
    for (const metadata_condition of [
      null,
      { logical_operator: 'and', conditions: null },
      { logical_operator: null, conditions: null },
      {
        logical_operator: null,
        conditions: [{ name: 'file_id', comparison_operator: 'is', value: 'bread' }],
      },
    ]) {
      const res = await retrieval(ask({ metadata_condition }));
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(files(res.json)).toEqual(['bread']);
    }
  });

  it('reads top_k null or 0 as the default, a null score_threshold as 0', async () => {
    const broad = { query: 'bread tax bicycle' };
    for (const top_k of [null, 0]) {
      const res = await retrieval(ask({ ...broad, retrieval_setting: { top_k, score_threshold: null } }));
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      expect(files(res.json)).toEqual(['bikes', 'bread', 'tax']);
    }
  });

  it('answers an empty or null query with no records', async () => {
    for (const query of ['', '   ', null]) {
      expect(await retrieval(ask({ query }))).toEqual({ status: 200, json: { records: [] } });
    }
  });

  it("maps Dify's automatic filter (`or`, its field names and operators) instead of refusing it", async () => {
    const condition = (logical_operator: string, conditions: unknown[]) =>
      retrieval(
        ask({
          query: 'bread tax bicycle',
          retrieval_setting: { top_k: 10, score_threshold: 0 },
          metadata_condition: { logical_operator, conditions },
        }),
      );
    const or = await condition('or', [
      { name: 'document_name', comparison_operator: 'contains', value: 'BREAD' },
      { name: 'uploader', comparison_operator: 'is', value: 'somebody-else' },
      { name: 'source', comparison_operator: 'end with', value: 'bikes.md' },
    ]);
    expect(or.status, JSON.stringify(or.json)).toBe(200);
    expect(files(or.json)).toEqual(['bikes', 'bread']);
    const and = await condition('and', [
      { name: 'document_name', comparison_operator: 'start with', value: 'guides/' },
      { name: 'document_name', comparison_operator: 'not contains', value: 'tax' },
      { name: 'uploader', comparison_operator: 'is', value: 'u1' },
      { name: 'split_id', comparison_operator: '≥', value: 0 },
      { name: 'subject', comparison_operator: 'empty' },
    ]);
    expect(and.status, JSON.stringify(and.json)).toBe(200);
    expect(files(and.json)).toEqual(['bread']);
    const none = await condition('and', [{ name: 'uploader', comparison_operator: '≠', value: 'u1' }]);
    expect(none).toEqual({ status: 200, json: { records: [] } });
  });
});

describe('a query that matches nothing', () => {
  const query = 'zeppelin quantum marmalade';

  it('answers Dify no records, not the opening chunks at score 0', async () => {
    expect(await retrieval(ask({ query }))).toEqual({ status: 200, json: { records: [] } });
  });

  it("still answers POST /search with a small collection's opening chunks (Open WebUI's summarise-this-file)", async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/search',
      headers: AUTH,
      payload: { queries: [query], collection_names: ['kb'], k: 3 },
    });
    expect(res.statusCode).toBe(200);
    const json = res.json() as { documents: string[][]; distances: number[][] };
    expect(json.documents[0]?.length).toBeGreaterThan(0);
    expect(json.distances[0]?.every((d) => d === 0)).toBe(true);
  });
});
