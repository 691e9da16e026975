import { readFileSync } from 'node:fs';

let version: string | undefined;

/** Kilde's package version (`src/` and `dist/` both sit one level below package.json). */
export function kildeVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  return version;
}
