// Preloaded (NODE_OPTIONS=--import) by test/cli/lean-commands.test.ts: appends every package a
// process imports by name (`fastify`, `@aws-sdk/client-s3`, …) to the file in KILDE_TEST_PACKAGES_FILE,
// and every Kilde module it loads (`cli/http-backend.js`, by its path in dist/) to the file in
// KILDE_TEST_MODULES_FILE.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.KILDE_TEST_PACKAGES_FILE;
const modules = process.env.KILDE_TEST_MODULES_FILE;
registerHooks({
  resolve(specifier, context, next) {
    if (file && /^(@[\w.-]+\/)?[\w.-]+$/.test(specifier)) appendFileSync(file, `${specifier}\n`);
    const resolved = next(specifier, context);
    const own = modules && specifier.startsWith('.') ? /\/dist\/(.+)$/.exec(resolved.url) : null;
    if (own) appendFileSync(modules, `${own[1]}\n`);
    return resolved;
  },
});
