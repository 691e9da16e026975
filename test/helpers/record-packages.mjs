// Preloaded (NODE_OPTIONS=--import) by test/cli/lean-commands.test.ts: appends every package a
// process imports by name (`fastify`, `@aws-sdk/client-s3`, …) to the file in KILDE_TEST_PACKAGES_FILE.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.KILDE_TEST_PACKAGES_FILE;
registerHooks({
  resolve(specifier, context, next) {
    if (file && /^(@[\w.-]+\/)?[\w.-]+$/.test(specifier)) appendFileSync(file, `${specifier}\n`);
    return next(specifier, context);
  },
});
