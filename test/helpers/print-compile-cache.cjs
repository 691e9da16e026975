// Preloaded (NODE_OPTIONS=--require) into every Node process of a `kilde` run by
// test/cli/compile-cache.test.ts: appends this process's pid, the NODE_COMPILE_CACHE it started with
// and the compile cache directory Node enabled at its start (none: an empty string) to the file
// named by KILDE_TEST_COMPILE_CACHE_LOG.
const { appendFileSync } = require('node:fs');
const { getCompileCacheDir } = require('node:module');

appendFileSync(
  process.env.KILDE_TEST_COMPILE_CACHE_LOG,
  `${JSON.stringify({
    pid: process.pid,
    env: process.env.NODE_COMPILE_CACHE ?? '',
    enabled: getCompileCacheDir?.() ?? '',
  })}\n`,
);
