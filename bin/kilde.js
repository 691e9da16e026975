#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script).
import { main } from '../dist/cli/main.js';

await main(process.argv);
