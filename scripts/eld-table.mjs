/**
 * Writes eld's extrasmall language table as JSON beside the built language detector
 * (dist/extract/eld-extrasmall.json, with eld's version), which src/extract/languages.ts parses
 * instead of evaluating eld's 950 KB object literal: about a third of the CPU and memory per worker
 * that detects a language. Run by `npm run build` after tsc; without the file eld's module is used.
 * `node scripts/eld-table.mjs [out.json]` writes elsewhere (the test does).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const entry = fileURLToPath(import.meta.resolve('eld/extrasmall'));
const { ngramsData } = await import(new URL('../ngrams/extrasmall.js', pathToFileURL(entry)).href);
const { version } = JSON.parse(readFileSync(new URL('../../package.json', pathToFileURL(entry)), 'utf8'));
const out = process.argv[2] ?? fileURLToPath(new URL('../dist/extract/eld-extrasmall.json', import.meta.url));
mkdirSync(dirname(out), { recursive: true });
writeFileSync(`${out}.tmp`, JSON.stringify({ eld: version, data: ngramsData }));
renameSync(`${out}.tmp`, out);
