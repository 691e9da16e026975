// Preloaded (NODE_OPTIONS=--require) by test/cli/process-memory.test.ts: prints the memory settings
// the Node process was started with, on stderr, before the CLI runs.
process.stderr.write(
  `process-memory ${JSON.stringify({
    GLIBC_TUNABLES: process.env.GLIBC_TUNABLES,
    NODE_OPTIONS: process.env.NODE_OPTIONS,
  })}\n`,
);
