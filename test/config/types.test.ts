import { pino } from 'pino';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { allService, defineService, SERVICES } from '../../src/cli/services.js';
import { extractionSchema } from '../../src/config/extraction.js';
import { parseConfig } from '../../src/config/parse.js';
import { toolsSchema } from '../../src/config/tools.js';
import { allSchema, resolveAllConfig } from '../../src/embedded/all-config.js';

/**
 * The configuration's types reach the code that uses it: `tsc` (run by `npm test`) fails when a
 * `@ts-expect-error` below stops being an error, i.e. when a misspelt variable would compile.
 */
describe('configuration types', () => {
  const log = pino({ enabled: false });

  it("hands a service definition its own schema's configuration; a misspelt variable does not compile", async () => {
    const seen: unknown[] = [];
    const probe = defineService({
      name: 'probe',
      summary: 'reads two variables',
      schema: toolsSchema,
      async create(config) {
        expectTypeOf(config.WEATHER_CACHE_TTL).toEqualTypeOf<number>();
        seen.push(config.WEATHER_API_BASE_URL);
        // @ts-expect-error WEATHER_API_BASE_ULR is no tools variable
        seen.push(config.WEATHER_API_BASE_ULR);
        return [];
      },
    });
    const configured = probe.configure({ API_KEY: 'k', WEATHER_API_KEY: 'w' });
    expect(configured.kernel.API_KEY).toBe('k');
    expect(await configured.create(log)).toEqual([]);
    expect(seen).toEqual(['http://weather:8000', undefined]);
  });

  it('takes only schemas that include the kernel settings', () => {
    // @ts-expect-error the extraction schema has no HOST, PORT or API_KEY: no service can serve it
    defineService({ name: 'x', summary: 'x', schema: extractionSchema, create: async () => [] });
  });

  it('types the `all` configuration that every member service receives', () => {
    const { config, tools } = resolveAllConfig(
      parseConfig(allSchema, { API_KEY: 'k', WEATHER_API_BASE_URL: 'http://w:1', WEATHER_API_KEY: 'w' }),
    );
    expectTypeOf(config.ENABLE_QUERY_GENERATION).toEqualTypeOf<boolean>();
    expectTypeOf(config.AGENT_API_BASE_URL).toEqualTypeOf<string>();
    // @ts-expect-error CHUNK_SPLITBY is no variable
    expect(config.CHUNK_SPLITBY).toBeUndefined();
    expect(config.CHUNK_SPLIT_BY).toBe('markdown');
    expect(tools?.WEATHER_API_KEY).toBe('w');
  });

  it('registers every service, `all` included, with a schema that documents its variables', () => {
    expect(SERVICES.map((s) => s.name)).toEqual([
      'agent',
      'tools',
      'ingest',
      'worker',
      'retrieve',
      'extractor',
    ]);
    for (const s of [...SERVICES, allService]) expect(s.schema.shape).toHaveProperty('API_KEY');
  });
});
