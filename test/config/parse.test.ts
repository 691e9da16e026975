import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentSchema } from '../../src/config/agent.js';
import { bool, jsonStringArray } from '../../src/config/fields.js';
import { ConfigError, parseConfig } from '../../src/config/parse.js';

describe('configuration parsing', () => {
  it('applies the documented defaults and ignores unknown variables', () => {
    const c = parseConfig(agentSchema, { API_KEY: 'k', SOMETHING_ELSE: 'x' });
    expect(c.PORT).toBe(8000);
    expect(c.HOST).toBe('0.0.0.0');
    expect(c.AGENT_TIMEOUT).toBe(60);
    expect(c.METRICS_ENABLED).toBe(true);
    expect(c.DEBUG).toBe(false);
    expect(c).not.toHaveProperty('SOMETHING_ELSE');
  });

  it('freezes the parsed config', () => {
    const c = parseConfig(agentSchema, { API_KEY: 'k' });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it.each([
    ['true', true],
    ['TRUE', true],
    ['1', true],
    ['yes', true],
    ['Yes', true],
    ['false', false],
    ['False', false],
    ['0', false],
    ['no', false],
    ['NO', false],
  ])('accepts boolean %s', (raw, expected) => {
    expect(parseConfig(agentSchema, { API_KEY: 'k', DEBUG: raw }).DEBUG).toBe(expected);
  });

  it('rejects a boolean it cannot read, naming the variable', () => {
    expect(() => parseConfig(agentSchema, { API_KEY: 'k', DEBUG: 'maybe' })).toThrow(/DEBUG must be one of/);
  });

  it('names a missing required variable', () => {
    expect(() => parseConfig(agentSchema, {})).toThrow(ConfigError);
    expect(() => parseConfig(agentSchema, { API_KEY: '  ' })).toThrow(/API_KEY is required/);
  });

  it('parses JSON string arrays and rejects anything else clearly', () => {
    const schema = z.object({
      HOSTS: jsonStringArray(['tools:*', 'localhost:*'], 'hosts'),
      FLAG: bool(false, 'f'),
    });
    expect(parseConfig(schema, {}).HOSTS).toEqual(['tools:*', 'localhost:*']);
    expect(parseConfig(schema, { HOSTS: '["a:*"]' }).HOSTS).toEqual(['a:*']);
    expect(() => parseConfig(schema, { HOSTS: 'a:*' })).toThrow(/HOSTS must be a JSON array of strings/);
    expect(() => parseConfig(schema, { HOSTS: '[1,2]' })).toThrow(/HOSTS must be a JSON array of strings/);
    expect(() => parseConfig(schema, { HOSTS: '{"a":1}' })).toThrow(/HOSTS must be a JSON array of strings/);
  });

  it.each(['localhost:4000/v1', 'ftp://llm/v1', 'mailto:ops@example.com', 'http//llm/v1'])(
    'rejects a URL variable that is not http(s): %s',
    (value) => {
      expect(() => parseConfig(agentSchema, { API_KEY: 'k', AGENT_API_BASE_URL: value })).toThrow(
        /AGENT_API_BASE_URL must be an http\(s\) URL/,
      );
    },
  );

  it('accepts http and https URLs, keeping the path', () => {
    for (const value of ['http://127.0.0.1:4000/v1', 'https://llm.example.com/v1/', 'HTTP://llm:4000/v1'])
      expect(parseConfig(agentSchema, { API_KEY: 'k', AGENT_API_BASE_URL: value }).AGENT_API_BASE_URL).toBe(
        value,
      );
  });

  it('rejects a non-integer port', () => {
    expect(() => parseConfig(agentSchema, { API_KEY: 'k', PORT: 'eighty' })).toThrow(
      /PORT must be an integer/,
    );
  });
});

describe('kilde serve without API_KEY', () => {
  it('exits non-zero with one line naming the variable', () => {
    const env = { ...process.env };
    delete env.API_KEY;
    const r = spawnSync(process.execPath, ['bin/kilde.js', 'serve', 'agent'], {
      env,
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.status).not.toBeNull();
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/API_KEY is required/);
    expect(r.stderr).not.toMatch(/at .*\.js:\d+/);
  });
});

describe('LOG_LEVEL_APP', () => {
  it.each(['DEBUG', 'debug', 'Debug', ' Warning '])('accepts %j in any case', (raw) => {
    expect(['debug', 'warning']).toContain(
      parseConfig(agentSchema, { API_KEY: 'k', LOG_LEVEL_APP: raw }).LOG_LEVEL_APP,
    );
  });

  it('rejects an unknown level, naming the variable', () => {
    expect(() => parseConfig(agentSchema, { API_KEY: 'k', LOG_LEVEL_APP: 'loud' })).toThrow(/LOG_LEVEL_APP/);
  });
});
