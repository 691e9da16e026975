import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConformance } from '../../scripts/conformance.js';
import { type FakeWeather, startFakeWeather } from '../fakes/weather.js';
import { startTools, type ToolsHarness } from './harness.js';

let up: FakeWeather;
let h: ToolsHarness;

beforeAll(async () => {
  up = await startFakeWeather();
  h = await startTools(up.url);
});
afterAll(async () => {
  await h.app.close();
  await up.close();
});

describe('official MCP conformance suite', () => {
  it('passes every applicable scenario; the rest match conformance-baseline.yml exactly', async () => {
    const run = await runConformance(h.mcpUrl.href, { timeoutMs: 60_000 });
    expect(run.code, run.output).toBe(0);
    for (const gated of ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']) {
      expect(run.output).toMatch(new RegExp(`✓ ${gated}: [1-9]\\d* passed, 0 failed`));
    }
  }, 90_000);
});
