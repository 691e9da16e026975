#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script).
// Node's compile cache goes on first (src/cli/compile-cache.ts), so the CLI's modules, loaded after
// it, are read from and written to it.
import { startCompileCache } from '../dist/cli/compile-cache.js';

startCompileCache();
const { main } = await import('../dist/cli/main.js');
await main(process.argv);
