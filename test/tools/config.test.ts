import { describe, expect, it } from 'vitest';
import { agentSchema } from '../../src/config/agent.js';
import { ConfigError, parseConfig } from '../../src/config/parse.js';
import { toolsSchema } from '../../src/config/tools.js';

const base = { API_KEY: 'k', WEATHER_API_KEY: 'w' };

describe('tool server configuration', () => {
  it('has the contract defaults', () => {
    const c = parseConfig(toolsSchema, base);
    expect(c.MCP_ALLOWED_HOSTS).toEqual(['tools:*', 'localhost:*']);
    expect(c.MCP_ALLOWED_ORIGINS).toBeUndefined();
    expect(c.MCP_BEARER_AUTH).toBe(false);
    expect(c.MCP_JSON_RESPONSE).toBe(false);
    expect(c.WEATHER_CACHE_TTL).toBe(600);
    expect(parseConfig(agentSchema, base).MCP_ALLOWED_HOSTS).toEqual(['agent:*', 'localhost:*']);
  });

  it('requires WEATHER_API_KEY and API_KEY', () => {
    expect(() => parseConfig(toolsSchema, { API_KEY: 'k' })).toThrow(/WEATHER_API_KEY is required/);
    expect(() => parseConfig(toolsSchema, { WEATHER_API_KEY: 'w' })).toThrow(/API_KEY is required/);
  });

  it('reads MCP_ALLOWED_HOSTS as a JSON array, even for one entry', () => {
    expect(
      parseConfig(toolsSchema, { ...base, MCP_ALLOWED_HOSTS: '["mcp.example.com:*"]' }).MCP_ALLOWED_HOSTS,
    ).toEqual(['mcp.example.com:*']);
    expect(parseConfig(toolsSchema, { ...base, MCP_ALLOWED_HOSTS: '[]' }).MCP_ALLOWED_HOSTS).toEqual([]);
    expect(() => parseConfig(toolsSchema, { ...base, MCP_ALLOWED_HOSTS: 'tools:*' })).toThrow(ConfigError);
    expect(() => parseConfig(toolsSchema, { ...base, MCP_ALLOWED_ORIGINS: '[1]' })).toThrow(
      /MCP_ALLOWED_ORIGINS must be a JSON array of strings/,
    );
  });
});
