import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileIdFor } from '../../src/index/identifiers.js';
import { AUTH } from '../helpers/app.js';
import { type Harness, multipartBody, startIngest } from '../ingest/helpers/harness.js';
import { type RetrieveHarness, startRetrieve } from '../retrieve/helpers/retrieve.js';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/** A BEIR dataset the test writes itself: corpus, queries, qrels/test.tsv. */
const CORPUS = [
  { _id: 'd1', title: 'Vitamin D and bones', text: 'Vitamin D deficiency weakens bones and causes rickets.' },
  { _id: 'd2', title: 'Smoking and lungs', text: 'Tobacco smoking is the main cause of lung cancer.' },
  { _id: 'd3', title: 'Exercise', text: 'Regular exercise lowers blood pressure and helps the heart.' },
  { _id: 'd4', title: 'Sleep', text: 'Adults need seven to nine hours of sleep for memory.' },
];
const QUERIES = [
  { _id: 'q1', text: 'what causes rickets' },
  { _id: 'q2', text: 'lung cancer cause' },
  { _id: 'q3', text: 'does exercise reduce blood pressure' },
];
const QRELS = 'query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n';

const jsonl = (rows: object[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;

describe('kilde eval on the embedded index', () => {
  let tmp: Awaited<ReturnType<typeof tempDir>>;
  let env: NodeJS.ProcessEnv;
  const path = (...p: string[]) => join(tmp.dir, ...p);

  beforeAll(async () => {
    tmp = await tempDir('kilde-eval-cli-');
    env = cleanEnv({ KILDE_DATA_DIR: path('.kilde') });
    await mkdir(path('ds', 'qrels'), { recursive: true });
    await writeFile(path('ds', 'corpus.jsonl'), jsonl(CORPUS));
    await writeFile(path('ds', 'queries.jsonl'), jsonl(QUERIES));
    await writeFile(path('ds', 'qrels', 'test.tsv'), QRELS);
  });
  afterAll(() => tmp?.remove());

  it('--dataset ingests the corpus, scores the queries, stores the run and writes --out', async () => {
    const run = await runCli(
      ['eval', '--dataset', path('ds'), '-c', 'beir', '--name', 'first', '--out', path('a.json')],
      env,
      tmp.dir,
    );
    expect(run.stderr).toContain('ingested 4 of 4 documents into "beir"');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^run \S+ "first": 3 queries on "beir"/);
    expect(run.stdout).toMatch(/^nDCG@10 +1\.0000$/m);
    const saved = JSON.parse(await readFile(path('a.json'), 'utf8'));
    expect(saved.per_query.map((r: { retrieved: string[] }) => r.retrieved[0])).toEqual(['d1', 'd2', 'd3']);

    const runs = await runCli(['eval', 'runs', '--json'], env, tmp.dir);
    expect(runs.code).toBe(0);
    expect(JSON.parse(runs.stdout)).toEqual([
      expect.objectContaining({ id: saved.id, name: 'first', queries: 3 }),
    ]);
  });

  it('compare is a regression gate: exit 1 when the measure drops by more than --max-drop, 0 otherwise', async () => {
    const a = JSON.parse(await readFile(path('a.json'), 'utf8'));
    const worse = {
      ...a,
      id: 'worse',
      per_query: a.per_query.map((r: Record<string, unknown>, i: number) =>
        i === 0 ? { ...r, 'ndcg@10': 0.5 } : r,
      ),
    };
    await writeFile(path('worse.json'), JSON.stringify(worse));
    const fail = await runCli(['eval', 'compare', path('a.json'), path('worse.json')], env, tmp.dir);
    expect(fail.code).toBe(1);
    expect(fail.stdout).toMatch(/^nDCG@10 +1\.0000 +0\.8333 +-0\.1667 +1\.000$/m);
    expect(fail.stdout).toContain('3 paired queries');
    expect(fail.stdout).toContain('gate: nDCG@10 dropped 0.1667, 0.0100 allowed: FAIL');
    const pass = await runCli(
      ['eval', 'compare', path('a.json'), a.id, '--max-drop', '0.2', '--json'],
      env,
      tmp.dir,
    );
    expect(pass.code).toBe(0);
    expect(JSON.parse(pass.stdout)).toMatchObject({ paired: 3, gate: { metric: 'ndcg@10', failed: false } });
  });

  it('malformed qrels and a collection that does not exist are reported with their exit codes', async () => {
    await writeFile(path('bad.tsv'), 'q1\td1\t1\nq2 d2\n');
    const bad = await runCli(
      ['eval', '-c', 'beir', '--queries', path('ds', 'queries.jsonl'), '--qrels', path('bad.tsv')],
      env,
      tmp.dir,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('bad.tsv line 2: expected "query-id<TAB>corpus-id<TAB>score"');
    const none = await runCli(
      [
        'eval',
        '-c',
        'nope',
        '--queries',
        path('ds', 'queries.jsonl'),
        '--qrels',
        path('ds', 'qrels', 'test.tsv'),
      ],
      env,
      tmp.dir,
    );
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('collection "nope" does not exist');
  });
});

describe('kilde eval --url against a running server', () => {
  let ingest: Harness;
  let retrieve: RetrieveHarness;
  let tmp: Awaited<ReturnType<typeof tempDir>>;

  beforeAll(async () => {
    tmp = await tempDir('kilde-eval-url-');
    ingest = await startIngest();
    for (const doc of CORPUS) {
      const { body, headers } = multipartBody(
        {
          file_id: fileIdFor('kb', doc._id),
          filename: `${doc._id}.txt`,
          collection_name: 'kb',
          user_id: 'u',
        },
        { name: `${doc._id}.txt`, content: `${doc.title}\n\n${doc.text}\n`, type: 'text/plain' },
      );
      const res = await ingest.app.inject({
        method: 'PUT',
        url: '/api/v1/ingest',
        headers: { ...AUTH, ...headers },
        payload: body,
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    await ingest.settle(); // the retrieval app opens its own index on the data directory
    retrieve = await startRetrieve({ KILDE_DATA_DIR: ingest.dataDir, EMBEDDING_PROVIDER: 'none' });
    await writeFile(join(tmp.dir, 'q.jsonl'), jsonl(QUERIES));
    await writeFile(join(tmp.dir, 'r.tsv'), QRELS);
  });
  afterAll(async () => {
    await retrieve?.close();
    await ingest?.close();
    await tmp?.remove();
  });

  it('runs the queries on the server, which stores the run; show and compare fetch it by id', async () => {
    const env = cleanEnv({ KILDE_DATA_DIR: join(tmp.dir, 'client') });
    const remote = ['--url', retrieve.url, '--api-key', 'test-key'];
    const run = await runCli(
      [
        'eval',
        '-c',
        'kb',
        '--queries',
        join(tmp.dir, 'q.jsonl'),
        '--qrels',
        join(tmp.dir, 'r.tsv'),
        '--json',
        ...remote,
      ],
      env,
      tmp.dir,
    );
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result).toMatchObject({ queries: 3, metrics: { 'ndcg@10': 1 } });
    const show = await runCli(['eval', 'show', result.id, ...remote], env, tmp.dir);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^q1 +1\.0000 +1\.0000 +1\.0000 +1\.0000 +1 +d1/m);
    const cmp = await runCli(['eval', 'compare', result.id, result.id, ...remote], env, tmp.dir);
    expect(cmp.code).toBe(0);
    expect(cmp.stdout).toContain('gate: nDCG@10 did not drop');
  });
});
