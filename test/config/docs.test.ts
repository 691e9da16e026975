import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderConfigDocs } from '../../scripts/config-docs.js';

describe('docs/configuration.md', () => {
  it('is up to date with the config schemas (run `npm run docs:config`)', () => {
    const committed = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    expect(committed).toBe(renderConfigDocs());
  });

  it('documents every variable with type and default', () => {
    const text = renderConfigDocs();
    for (const v of [
      'API_KEY',
      'AGENT_API_BASE_URL',
      'AGENT_TIMEOUT',
      'METRICS_ENABLED',
      'DEBUG',
      'LOG_LEVEL_APP',
    ]) {
      expect(text).toMatch(new RegExp(`\\| \`${v}\` \\|`));
    }
  });
});
