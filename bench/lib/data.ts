import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the benchmarks find data the repository cannot ship (non-commercial licences):
 *   scifact/         BEIR SciFact: corpus.jsonl, queries-train.jsonl, qrels-train.tsv
 *                    (https://github.com/beir-cellar/beir, CC BY-NC 2.0)
 *   da-citizenship/  the Danish citizenship-test textbook as Markdown chapters (corpus/*.md) and
 *                    questions-dev.jsonl labelled with the answering section (educational use)
 * `KILDE_BENCH_DATA` names the folder holding them; without it, `../shared/data` beside the checkout.
 */
export const BENCH_DATA = resolve(
  process.env.KILDE_BENCH_DATA ?? fileURLToPath(new URL('../../../shared/data/', import.meta.url)),
);

/** The path of one data set, or exit 2 saying where to get it. */
export function benchData(set: 'scifact' | 'da-citizenship', ...rest: string[]): string {
  const dir = join(BENCH_DATA, set);
  if (!existsSync(dir)) {
    process.stderr.write(
      `bench: data set "${set}" not found in ${BENCH_DATA}.\n` +
        'Set KILDE_BENCH_DATA to a folder holding scifact/ (BEIR SciFact: corpus.jsonl, queries-train.jsonl,\n' +
        'qrels-train.tsv) and da-citizenship/ (corpus/*.md, questions-dev.jsonl); see CONTRIBUTING.md.\n',
    );
    process.exit(2);
  }
  return join(dir, ...rest);
}

/** The tokenizer the test suite ships (all-MiniLM-L6-v2 WordPiece). */
export const FIXTURE_TOKENIZER = fileURLToPath(
  new URL('../../test/fixtures/models/all-MiniLM-L6-v2/tokenizer.json', import.meta.url),
);
export const FIXTURE_DOCUMENTS = fileURLToPath(new URL('../../test/fixtures/documents', import.meta.url));
