import { writeFileSync } from 'node:fs';
import { renderErrorDocs } from './errors-doc.js';

const target = new URL('../docs/errors.md', import.meta.url);
writeFileSync(target, renderErrorDocs());
process.stdout.write(`wrote ${target.pathname}\n`);
