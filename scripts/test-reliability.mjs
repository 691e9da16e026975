#!/usr/bin/env node
// npm run test:reliability [-- --long] [vitest args]: the reliability suite (test/reliability/).
// `--long` runs the hostile documents at full size (e.g. a 100,000-page PDF) and whatever else the
// suite keeps for long runs; without it the suite runs at the size `npm test` runs it in CI.
import { spawn } from 'node:child_process';

const args = process.argv.slice(2);
const long = args.includes('--long');
const rest = args.filter((a) => a !== '--long');
const child = spawn(
  'npx',
  ['vitest', 'run', '--project', 'reliability', ...(long ? ['--testTimeout=900000'] : []), ...rest],
  {
    stdio: 'inherit',
    env: { ...process.env, ...(long ? { KILDE_RELIABILITY_LONG: '1' } : {}) },
  },
);
child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 1)));
