import { writeFileSync } from 'node:fs';
import { renderConfigDocs } from './config-docs.js';

const target = new URL('../docs/configuration.md', import.meta.url);
writeFileSync(target, renderConfigDocs());
process.stdout.write(`wrote ${target.pathname}\n`);
