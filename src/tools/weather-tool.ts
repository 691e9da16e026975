import { RpcCode, ToolError } from '../mcp/json-rpc.js';
import { defineTool } from '../mcp/tool-definition.js';
import { WeatherError, type WeatherFailure } from './weather-client.js';
import { type WeatherService, weatherArgs } from './weather-service.js';

const CODES: Record<WeatherFailure, number> = {
  'not-found': RpcCode.UpstreamNotFound,
  rejected: RpcCode.UpstreamRejected,
  unavailable: RpcCode.UpstreamUnavailable,
  timeout: RpcCode.UpstreamTimeout,
};

/** `get_weather`: one upstream call (or a cache hit) through the same service as `GET /weather`. */
export function weatherTool(service: WeatherService) {
  return defineTool({
    name: 'get_weather',
    // As `GET /weather`: the main key only.
    callers: 'main',
    doc: `Get the current weather (temperature in °C, conditions, observation time) for a city.
      Call it when the user asks about current weather, temperature or conditions somewhere, or
      when an answer depends on them. Give the city name in English ("Copenhagen", not "København").
      It knows only the present, not forecasts or history. Answers may be up to 10 minutes old.`,
    input: weatherArgs,
    annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
    async run(args, ctx) {
      await ctx.progress(`Looking up the weather in ${args.city}`, 0, 1);
      try {
        // The result is small (four fields), so unlike a long record it needs no compaction.
        return JSON.stringify(await service.current(args, ctx.signal));
      } catch (err) {
        if (err instanceof WeatherError) throw new ToolError(CODES[err.kind], err.message, { cause: err });
        throw err;
      }
    },
  });
}
