import { describe, expect, it } from 'vitest';
import { markdownTable } from '../../src/extract/markdown-table.js';

describe('markdownTable', () => {
  it('pads every row to the widest and escapes pipes and line breaks', () => {
    expect(markdownTable([['a', 'b'], ['1|2', 'x\ny', 'extra'], ['z']])).toBe(
      ['| a | b |  |', '| --- | --- | --- |', '| 1\\|2 | x y | extra |', '| z |  |  |'].join('\n'),
    );
  });

  it('renders a sheet of half a million rows (a spread that large overflows the call stack)', () => {
    const rows = Array.from({ length: 500_000 }, (_, i) => [String(i), i % 2 ? 'odd' : 'even']);
    const lines = markdownTable(rows).split('\n');
    expect(lines).toHaveLength(500_001);
    expect(lines.at(-1)).toBe('| 499999 | odd |');
  });
});
