/**
 * `node --import ./bench/lib/use-dist.mjs bench/x.ts` (Node 24 strips the bench's types itself):
 * everything the bench imports from `src/` is loaded from the built `dist/` instead, as the `kilde`
 * command runs it, and so are the worker processes the pool forks. No TypeScript compiler or loader
 * thread runs while the bench is timed. Build first (`npm run build`).
 */
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath } from 'node:url';

const SRC = new URL('../../src/', import.meta.url).href;
const DIST = new URL('../../dist/', import.meta.url).href;
const BENCH = new URL('../', import.meta.url).href;

registerHooks({
  resolve(specifier, context, next) {
    if (context.parentURL && (specifier.startsWith('./') || specifier.startsWith('../'))) {
      const url = new URL(specifier, context.parentURL).href;
      // A module of src/ resolves to its build in dist/.
      if (url.startsWith(SRC))
        return next(`${DIST}${url.slice(SRC.length).replace(/\.ts$/, '.js')}`, context);
      // The bench's own modules are TypeScript, imported by their .js names.
      if (url.startsWith(BENCH) && url.endsWith('.js') && !existsSync(fileURLToPath(url))) {
        return next(url.replace(/\.js$/, '.ts'), context);
      }
    }
    return next(specifier, context);
  },
});
