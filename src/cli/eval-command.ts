import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import {
  type CorpusDocument,
  documentText,
  EvalInputError,
  parseQrels,
  parseQueries,
  readCorpus,
} from '../eval/beir.js';
import { compareRuns } from '../eval/compare.js';
import { isMetric, METRICS, type Metric } from '../eval/metrics.js';
import { type EvalRun, evalRunSchema } from '../eval/run.js';
import { fileIdFor } from '../index/identifiers.js';
import type { Backend, EvalRequest } from './backend.js';
import {
  backendFor,
  type CliIo,
  collections,
  errorMessage,
  type Remote,
  remoteOptions,
  requireCollections,
  withBackend,
} from './commands.js';
import { renderComparison, renderRun, renderRuns } from './eval-render.js';
import { CliError } from './fail.js';

interface EvalOptions extends Remote {
  collection?: string[];
  queries?: string;
  qrels?: string;
  dataset?: string;
  split: string;
  skipIngest?: boolean;
  name?: string;
  k: number;
  out?: string;
  json?: boolean;
  concurrency: number;
}

function kChunks(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 10 || n > 100) throw new InvalidArgumentError('-k must be 10..100');
  return n;
}

function metricName(v: string): Metric {
  const m = v.toLowerCase();
  if (!isMetric(m)) throw new InvalidArgumentError(`--metric must be one of ${METRICS.join(', ')}`);
  return m;
}

function fraction(name: string) {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`${name} must be 0..1`);
    return n;
  };
}

function readInput(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${path}: ${(err as Error).message}`, 2);
  }
}

/** The first of `candidates` (relative to `dir`) that exists. */
function firstExisting(dir: string, candidates: readonly string[], what: string): string {
  const found = candidates.map((c) => join(dir, c)).find((p) => existsSync(p));
  if (!found) throw new CliError(`${what} not found in ${dir} (looked for ${candidates.join(', ')})`, 2);
  return found;
}

/** Parses BEIR inputs, turning a format error into a usage error naming the file and line. */
function parsed<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof EvalInputError) throw new CliError(err.message, 2);
    throw err;
  }
}

/**
 * `kilde eval --dataset DIR`: every corpus document becomes one text file (title line, blank line,
 * text) ingested under the path of its BEIR id, so qrels naming BEIR ids find it (`rankUnits`).
 * Each file is written just before it is ingested and removed after.
 */
async function ingestCorpus(
  io: CliIo,
  backend: Backend,
  corpusPath: string,
  collection: string,
  concurrency: number,
): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'kilde-eval-'));
  const docs = readCorpus(corpusPath);
  let done = 0;
  let chunks = 0;
  const failures: string[] = [];
  let n = 0;
  const next = async (): Promise<CorpusDocument | undefined> => {
    const r = await docs.next();
    return r.done ? undefined : r.value;
  };
  let reading = Promise.resolve<CorpusDocument | undefined>(undefined);
  const take = () => {
    reading = reading.then(next);
    return reading;
  };
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let doc = await take(); doc; doc = await take()) {
          const path = join(work, `${n++}.txt`);
          await writeFile(path, documentText(doc));
          try {
            const r = await backend.ingest({
              path,
              fileId: fileIdFor(collection, doc.id),
              filename: `${doc.id.replace(/[^\p{L}\p{N}._-]+/gu, '_').slice(0, 100)}.txt`,
              collection,
              userId: 'kilde-eval',
              source: doc.id,
            });
            chunks += r.chunks;
          } catch (err) {
            failures.push(`${doc.id}: ${errorMessage(err).error}`);
          } finally {
            await rm(path, { force: true });
          }
          done++;
          if (done % 500 === 0) io.err.write(`ingested ${done} documents\n`);
        }
      }),
    );
  } catch (err) {
    if (err instanceof EvalInputError) throw new CliError(err.message, 2);
    throw err;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  io.err.write(
    `ingested ${done - failures.length} of ${done} documents into "${collection}": ${chunks} chunks\n`,
  );
  for (const f of failures.slice(0, 10)) io.err.write(`  ${f}\n`);
  if (failures.length > 0) throw new CliError(`${failures.length} corpus document(s) failed to ingest`);
}

/** A run named by a path to its JSON file, or by its id in the store (local or the server's). */
async function loadRun(ref: string, backend: () => Promise<Backend>): Promise<EvalRun> {
  if (ref.endsWith('.json') || existsSync(ref)) {
    let raw: unknown;
    try {
      raw = JSON.parse(readInput(resolve(ref)));
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(`${ref} is not JSON`, 2);
    }
    const run = evalRunSchema.safeParse(raw);
    if (!run.success) throw new CliError(`${ref} is not an evaluation run (see kilde eval --out)`, 2);
    return run.data;
  }
  return (await backend()).getRun(ref);
}

export function registerEvalCommands(program: Command, io: CliIo): void {
  const evalCommand = remoteOptions(
    program
      .command('eval')
      .enablePositionalOptions()
      .description(
        'measure retrieval on labelled queries (BEIR formats): nDCG@10, Recall@10/100, MRR@10; the run is stored',
      )
      .option('-c, --collection <name>', 'collection(s) searched, comma-separated or repeated', collections)
      .option('--queries <file>', 'BEIR queries (JSON Lines: {"_id", "text"})')
      .option(
        '--qrels <file>',
        'BEIR qrels (TSV: query-id, corpus-id, score); ids are file_ids, ingested paths, or <file_id>#<split_id> chunks',
      )
      .option(
        '--dataset <dir>',
        'a BEIR dataset folder: ingests corpus.jsonl into the collection, then reads its queries and qrels',
      )
      .option('--split <name>', 'qrels split of --dataset (qrels/<split>.tsv or qrels-<split>.tsv)', 'test')
      .option('--skip-ingest', 'with --dataset: the corpus is already ingested')
      .option('--name <name>', 'a label stored with the run')
      .option('-k <k>', 'chunks fetched per query before pooling to documents (10..100)', kChunks, 100)
      .option('--concurrency <n>', 'documents ingested at once with --dataset', (v) => Number(v) || 8, 8)
      .option('--out <file>', 'also write the run as JSON to this file (a CI baseline)')
      .option('--json', 'print the whole run (per-query rows included) as JSON'),
  ).action(async (o: EvalOptions) => {
    const names = o.collection ?? [];
    if (names.length === 0) throw new CliError('kilde eval needs --collection', 2);
    if (!o.dataset && (!o.queries || !o.qrels)) {
      throw new CliError('kilde eval needs --queries and --qrels, or --dataset', 2);
    }
    const dir = o.dataset ? resolve(o.dataset) : undefined;
    const queriesPath = o.queries
      ? resolve(o.queries)
      : firstExisting(dir!, ['queries.jsonl', `queries-${o.split}.jsonl`], 'queries');
    const qrelsPath = o.qrels
      ? resolve(o.qrels)
      : firstExisting(dir!, [join('qrels', `${o.split}.tsv`), `qrels-${o.split}.tsv`], 'qrels');
    const queries = parsed(() => parseQueries(readInput(queriesPath), queriesPath));
    const qrels = parsed(() => parseQrels(readInput(qrelsPath), qrelsPath));
    await withBackend(io, o, undefined, async (backend) => {
      if (dir && !o.skipIngest) {
        if (names.length !== 1) throw new CliError('--dataset ingests into exactly one --collection', 2);
        const corpus = firstExisting(dir, ['corpus.jsonl'], 'corpus');
        await ingestCorpus(io, backend, corpus, names[0]!, o.concurrency);
      }
      await requireCollections(backend, names);
      const body: EvalRequest = {
        collection_names: names,
        queries,
        qrels: Object.fromEntries([...qrels].map(([q, docs]) => [q, Object.fromEntries(docs)])),
        k: o.k,
        ...(o.name === undefined ? {} : { name: o.name }),
      };
      const run = await backend.evaluate(body);
      if (o.out) await writeFile(resolve(o.out), `${JSON.stringify(run, null, 2)}\n`);
      io.out.write(o.json ? `${JSON.stringify(run)}\n` : renderRun(run));
    });
  });

  remoteOptions(
    evalCommand.command('runs').description('list stored evaluation runs').option('--json', 'print JSON'),
  ).action(async (o: Remote & { json?: boolean }) => {
    await withBackend(io, o, undefined, async (backend) => {
      const runs = await backend.listRuns();
      io.out.write(o.json ? `${JSON.stringify(runs)}\n` : renderRuns(runs));
    });
  });

  remoteOptions(
    evalCommand
      .command('show')
      .description('one stored run with its per-query rows')
      .argument('<run>', 'run id, or a run JSON file')
      .option('--json', 'print JSON'),
  ).action(async (ref: string, o: Remote & { json?: boolean }) => {
    await withLazyBackend(io, o, async (backend) => {
      const run = await loadRun(ref, backend);
      io.out.write(o.json ? `${JSON.stringify(run)}\n` : renderRun(run, true));
    });
  });

  remoteOptions(
    evalCommand
      .command('compare')
      .description(
        'compare run B with run A per measure (paired randomization test); exit 1 when --metric drops by more than --max-drop',
      )
      .argument('<run-a>', 'the baseline: run id, or a run JSON file')
      .argument('<run-b>', 'the candidate: run id, or a run JSON file')
      .option('--metric <name>', `measure the gate watches (${METRICS.join(', ')})`, metricName, 'ndcg@10')
      .option(
        '--max-drop <x>',
        'largest drop of that measure that passes (absolute)',
        fraction('--max-drop'),
        0.01,
      )
      .option('--alpha <p>', 'fail only when the drop is also significant at this level', fraction('--alpha'))
      .option('--json', 'print the comparison as JSON'),
  ).action(
    async (
      refA: string,
      refB: string,
      o: Remote & { metric: Metric; maxDrop: number; alpha?: number; json?: boolean },
    ) => {
      await withLazyBackend(io, o, async (backend) => {
        const a = await loadRun(refA, backend);
        const b = await loadRun(refB, backend);
        const comparison = compareRuns(a, b, { metric: o.metric, maxDrop: o.maxDrop, alpha: o.alpha });
        if (comparison.paired === 0) throw new CliError('the two runs share no query id', 2);
        io.out.write(o.json ? `${JSON.stringify(comparison)}\n` : renderComparison(comparison, a, b));
        if (comparison.gate.failed) process.exitCode = 1;
      });
    },
  );
}

/** Opens a backend only if a run has to be fetched from a store (files need none). */
async function withLazyBackend(
  io: CliIo,
  remote: Remote,
  run: (backend: () => Promise<Backend>) => Promise<void>,
): Promise<void> {
  let opened: Promise<Backend> | undefined;
  let backendRef: Backend | undefined;
  try {
    await run(() => {
      opened ??= (async () => {
        const b = await backendFor(io, remote);
        backendRef = b;
        await b.prepare();
        return b;
      })();
      return opened;
    });
  } finally {
    await backendRef?.close();
  }
}
