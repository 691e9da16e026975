// npm run test:fastembed-live: Kilde's BM25 (src/embed/bm25/) against the real fastembed package's
// `Qdrant/bm25`, the sparse model the reference ingestion path writes with. Every document and
// query vector of an English and a Danish corpus must be equal: the same token ids, and weights
// equal to float32 precision. fastembed is installed from PyPI into .tmp/interop-venv; its model
// (stop-word lists only) is supplied from Kilde's vendored copy, never fetched from a hub.
// Skipped, saying why, without `python3 -m venv` or the registry.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bm25Encoder } from '../../src/embed/bm25/encoder.js';
import type { SparseVector } from '../../src/index/contract.js';
import { DANISH_CORPUS, STOPWORDS } from '../fixtures/index.js';

const VENV = join(import.meta.dirname, '../../.tmp/interop-venv');
const PY = join(VENV, 'bin/python');
const PACKAGE = 'fastembed==0.9.1';

function skip(reason: string): never {
  console.log(`test:fastembed-live skipped: ${reason}`);
  process.exit(0);
}
if (!existsSync(PY) && spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'inherit' }).status !== 0) {
  skip('`python3 -m venv` is not available here');
}
if (spawnSync(PY, ['-c', 'import fastembed']).status !== 0) {
  console.log(`installing ${PACKAGE} into ${VENV}`);
  if (spawnSync(join(VENV, 'bin/pip'), ['install', '-q', PACKAGE], { stdio: 'inherit' }).status !== 0) {
    skip('pip could not install fastembed (no registry?)');
  }
}

/** Paragraphs of Kilde's own docs (English) and of the Danish fixture corpus. */
function paragraphs(dir: string, limit: number): string[] {
  const out: string[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.md'))
    .sort()) {
    for (const p of readFileSync(join(dir, f), 'utf8').split(/\n\s*\n/)) {
      if (p.trim().length > 20) out.push(p.trim());
      if (out.length >= limit) return out;
    }
  }
  return out;
}
const SETS = {
  english: paragraphs(join(import.meta.dirname, '../../docs'), 1500),
  danish: paragraphs(DANISH_CORPUS, 1500),
} as const;

const model = mkdtempSync(join(tmpdir(), 'kilde-fastembed-model-'));
for (const lang of ['english', 'danish']) {
  writeFileSync(join(model, `${lang}.txt`), readFileSync(join(STOPWORDS, lang)));
}

const same = (a: SparseVector, b: SparseVector) => {
  const ka = new Map(a.indices.map((i, n) => [i, a.values[n]!]));
  if (ka.size !== b.indices.length) return false;
  return b.indices.every((i, n) => {
    const v = ka.get(i);
    return v !== undefined && Math.abs(v - b.values[n]!) <= 1e-6 * Math.max(1, Math.abs(v));
  });
};

let failures = 0;
try {
  const version = spawnSync(PY, ['-c', 'import fastembed; print(fastembed.__version__)'])
    .stdout.toString()
    .trim();
  console.log(`fastembed ${version}, Qdrant/bm25 with Kilde's vendored stop words`);
  for (const [language, texts] of Object.entries(SETS)) {
    const queries = texts.slice(0, 300).map((t) => t.split(/\s+/).slice(0, 8).join(' '));
    const run = spawnSync(PY, [join(import.meta.dirname, 'fastembed_bm25.py')], {
      input: JSON.stringify({ language, model_dir: model, documents: texts, queries }),
      maxBuffer: 256 * 1024 * 1024,
      env: { ...process.env, HF_HUB_OFFLINE: '1' },
    });
    if (run.status !== 0) throw new Error(run.stderr.toString());
    const ref = JSON.parse(run.stdout.toString()) as { documents: SparseVector[]; queries: SparseVector[] };
    const enc = new Bm25Encoder({ language: language as 'english' | 'danish' });
    let docDiff = 0;
    let queryDiff = 0;
    for (const [i, t] of texts.entries()) {
      if (!same(enc.encodeDocument(t), ref.documents[i]!)) {
        if (docDiff++ < 3) console.log(`  ${language} document ${i} differs: ${t.slice(0, 80)}`);
      }
    }
    for (const [i, q] of queries.entries()) {
      if (!same(enc.encodeQuery(q), ref.queries[i]!)) {
        if (queryDiff++ < 3) console.log(`  ${language} query ${i} differs: ${q}`);
      }
    }
    failures += docDiff + queryDiff;
    console.log(
      `${language.padEnd(8)} ${texts.length} documents: ${texts.length - docDiff} equal; ${queries.length} queries: ${queries.length - queryDiff} equal`,
    );
  }
} finally {
  rmSync(model, { recursive: true, force: true });
}
console.log(
  failures === 0 ? 'fastembed parity: every vector equal' : `fastembed parity: ${failures} vectors differ`,
);
process.exit(failures === 0 ? 0 : 1);
