import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli, tempDir } from './helpers.js';

/** DEBUG is a boolean like every other: `1`, `yes` and `TRUE` turn on the CLI's stack traces too. */
describe('DEBUG in the CLI', () => {
  it('DEBUG=1 prints the stack of an unexpected error', async () => {
    const tmp = await tempDir('kilde-debug-');
    try {
      const env = cleanEnv({ KILDE_DATA_DIR: `${tmp.dir}/.kilde`, LOG_LEVEL_APP: 'error' });
      const quiet = await runCli(['extract', `${tmp.dir}/missing.md`], env, tmp.dir);
      expect(quiet.code).toBe(1);
      expect(quiet.stderr.trim().split('\n')).toHaveLength(1);
      const loud = await runCli(['extract', `${tmp.dir}/missing.md`], { ...env, DEBUG: '1' }, tmp.dir);
      expect(loud.code).toBe(1);
      expect(loud.stderr).toMatch(/ENOENT/);
      expect(loud.stderr).toMatch(/\n\s+at /);
    } finally {
      await tmp.remove();
    }
  });
});
