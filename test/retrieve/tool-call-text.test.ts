import { describe, expect, it } from 'vitest';
import { parseTextToolCall } from '../../src/retrieve/tool-call-text.js';

const o = { toolName: 'retrieve', maxQueries: 2, maxChars: 2000 };
const parse = (text: string) => parseTextToolCall(text, o);

describe('fallback parser: queries a model wrote as text', () => {
  it.each([
    ['the tool arguments', '{"queries": ["rye bread", "sourdough"]}', ['rye bread', 'sourdough']],
    ['one query', '{"query": "rye bread"}', ['rye bread']],
    ['a bare list', '["rye bread"]', ['rye bread']],
    ['a fenced block', '```json\n{"queries": ["rye bread"]}\n```', ['rye bread']],
    ['a call object', '{"name": "retrieve", "arguments": {"queries": ["rye bread"]}}', ['rye bread']],
    [
      'arguments as a JSON string',
      '{"name": "retrieve", "arguments": "{\\"queries\\": [\\"rye bread\\"]}"}',
      ['rye bread'],
    ],
    [
      "OpenAI's tool_calls shape",
      '{"tool_calls": [{"type": "function", "function": {"name": "retrieve", "arguments": "{\\"queries\\":[\\"tax\\"]}"}}]}',
      ['tax'],
    ],
    ['JSON inside a sentence', 'I will search: {"queries": ["rye bread"]} now.', ['rye bread']],
  ])('reads JSON: %s', (_name, text, queries) => {
    expect(parse(text)).toEqual({ format: 'json', queries });
  });

  it.each([
    ['v11 name + JSON', '[TOOL_CALLS]retrieve{"queries": ["rye bread"]}', ['rye bread']],
    ['v13 name [ARGS] JSON', '[TOOL_CALLS]retrieve[ARGS]{"queries": ["rye bread"]}', ['rye bread']],
    [
      'v3 list of calls',
      '[TOOL_CALLS][{"name": "retrieve", "arguments": {"queries": ["rye bread", "tax"]}}]',
      ['rye bread', 'tax'],
    ],
    [
      'two calls in a row, end-of-sequence token after',
      '[TOOL_CALLS]retrieve{"queries": ["a"]}[TOOL_CALLS]retrieve{"queries": ["b"]}</s>',
      ['a', 'b'],
    ],
    ['text before the mark', 'Let me look.\n[TOOL_CALLS]retrieve{"queries":["flu"]}', ['flu']],
  ])("reads Mistral's syntax: %s", (_name, text, queries) => {
    expect(parse(text)).toEqual({ format: 'mistral', queries });
  });

  it('an empty list is an explicit "no retrieval needed", not a failure to parse', () => {
    expect(parse('{"queries": []}')).toEqual({ format: 'json', queries: [] });
    expect(parse('[TOOL_CALLS]retrieve{"queries": []}')).toEqual({ format: 'mistral', queries: [] });
  });

  it('keeps at most 2 queries per call, trimmed, unique, clipped', () => {
    expect(parse('{"queries": [" a ", "a", "", "b", "c"]}')?.queries).toEqual(['a', 'b']);
    const long = 'x'.repeat(3000);
    expect(parse(JSON.stringify({ queries: [long] }))?.queries[0]).toHaveLength(2000);
  });

  it.each([
    ['prose', 'DONE'],
    ['prose with brackets', 'See [1] and [] for the details.'],
    ['a call of another tool', '{"name": "get_weather", "arguments": {"city": "Oslo"}}'],
    ['Mistral syntax for another tool', '[TOOL_CALLS]get_weather{"city": "Oslo"}'],
    ['truncated JSON', '{"queries": ["rye'],
    ['truncated Mistral', '[TOOL_CALLS]retrieve{"queries": ["rye'],
    ['numbers', '[1, 2, 3]'],
  ])('gives up on %s', (_name, text) => {
    expect(parse(text)).toBeUndefined();
  });
});
