/**
 * `npm run build:console` (run by `prepare`, so by `npm ci`): builds the web console with Vite into
 * dist/console, writes gzip and Brotli copies next to each text asset (served by `preCompressed`),
 * and prints the bundle size: every file raw, gzip and Brotli, and the totals a first visit loads.
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'vite';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'dist', 'console');

await build({ configFile: join(root, 'console', 'vite.config.ts') });

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? files(join(dir, e.name)) : Promise.resolve([join(dir, e.name)]))),
  );
  return nested.flat();
}

const rows: { file: string; raw: number; gzip: number; brotli: number }[] = [];
for (const file of (await files(out)).sort()) {
  if (!/\.(html|js|css|svg|json)$/.test(file)) continue;
  const body = await readFile(file);
  const gz = gzipSync(body, { level: 9 });
  const br = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
  await writeFile(`${file}.gz`, gz);
  await writeFile(`${file}.br`, br);
  rows.push({ file: relative(out, file), raw: (await stat(file)).size, gzip: gz.length, brotli: br.length });
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const width = Math.max(...rows.map((r) => r.file.length), 5);
console.log(`\nweb console bundle (${relative(root, out)}):`);
console.log(
  `  ${'file'.padEnd(width)}  ${'raw'.padStart(10)}  ${'gzip'.padStart(10)}  ${'brotli'.padStart(10)}`,
);
for (const r of rows) {
  console.log(
    `  ${r.file.padEnd(width)}  ${kib(r.raw).padStart(10)}  ${kib(r.gzip).padStart(10)}  ${kib(r.brotli).padStart(10)}`,
  );
}
const sum = (k: 'raw' | 'gzip' | 'brotli') => rows.reduce((a, r) => a + r[k], 0);
console.log(
  `  ${'total'.padEnd(width)}  ${kib(sum('raw')).padStart(10)}  ${kib(sum('gzip')).padStart(10)}  ${kib(sum('brotli')).padStart(10)}\n`,
);
