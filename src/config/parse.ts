import type { z } from 'zod';

/** A configuration problem, reported as one line naming the variable(s). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;

/** Parses the environment once; unknown variables are ignored; the result is deeply frozen. */
export function parseConfig<S extends z.ZodObject>(schema: S, env: Env): Readonly<z.output<S>> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const name = issue.path.map(String).join('.') || '(config)';
      return `${name} ${issue.message}`;
    });
    throw new ConfigError(`Configuration error: ${problems.join('; ')}`);
  }
  return deepFreeze(result.data);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
