import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allService, SERVICES } from '../../src/cli/services.js';
import { envDoc } from '../../src/config/fields.js';

const SRC = new URL('../../src/', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('configuration variables', () => {
  it('are each read by the code, or marked as having no effect in docs/configuration.md', () => {
    // A variable is read where the code accesses it as a property of a parsed configuration.
    const code = sources(SRC)
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const unread: string[] = [];
    for (const service of [...SERVICES, allService]) {
      for (const [name, field] of Object.entries(service.schema.shape)) {
        if (envDoc(field)?.inert) continue;
        if (!new RegExp(`\\.${name}\\b`).test(code)) unread.push(`${service.name}: ${name}`);
      }
    }
    expect(unread).toEqual([]);
  });

  it('marked as having no effect are read by nothing (the mark goes once the code reads one)', () => {
    const code = sources(SRC)
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const read: string[] = [];
    for (const service of [...SERVICES, allService]) {
      for (const [name, field] of Object.entries(service.schema.shape)) {
        if (envDoc(field)?.inert && new RegExp(`\\.${name}\\b`).test(code))
          read.push(`${service.name}: ${name}`);
      }
    }
    expect(read).toEqual([]);
  });
});
