#!/usr/bin/env node
// The registry this project installs from answers 404 for other platforms' optional native
// packages (e.g. @biomejs/cli-darwin-arm64), so `npm install` leaves them out of
// package-lock.json and `npm ci` then refuses the lockfile as out of sync. This adds an entry for
// each missing optional platform package, with the os/cpu/libc its name declares, so `npm ci`
// sees a complete lockfile and skips them on this platform (it never fetches them here).
// Run after every `npm install`: `node scripts/lock-platforms.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const pk = lock.packages;

const OS = ['android', 'darwin', 'linux', 'win32', 'freebsd', 'openbsd', 'sunos', 'aix', 'openharmony'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'riscv64', 'ppc64', 's390x', 'loong64', 'universal'];

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.find((p) => CPU.includes(p));
  if (!os) return undefined;
  const out = { os: [os] };
  if (cpu && cpu !== 'universal') out.cpu = [cpu === 'arm' ? 'arm' : cpu];
  if (os === 'linux') out.libc = [parts.includes('musl') ? 'musl' : 'glibc'];
  return out;
}

function resolves(from, dep) {
  let base = from;
  for (;;) {
    const cand = `${base ? `${base}/` : ''}node_modules/${dep}`;
    if (pk[cand]) return true;
    if (!base) return false;
    const i = base.lastIndexOf('/node_modules/');
    base = i >= 0 ? base.slice(0, i) : '';
  }
}

let added = 0;
for (const [path, meta] of Object.entries(pk)) {
  for (const [dep, spec] of Object.entries(meta.optionalDependencies ?? {})) {
    if (resolves(path, dep)) continue;
    const platform = platformOf(dep);
    if (!platform || !/^\d+\.\d+\.\d+/.test(spec)) continue;
    const at = `${path ? `${path}/` : ''}node_modules/${dep}`;
    pk[at] = { version: spec, optional: true, ...platform };
    added++;
  }
}
const sorted = Object.fromEntries(
  Object.entries(pk).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
lock.packages = sorted;
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`lock-platforms: added ${added} optional platform entries\n`);
