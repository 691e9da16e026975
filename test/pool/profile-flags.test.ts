import { describe, expect, it } from 'vitest';
import { profileFlags } from '../../src/pool/pool-process.js';

describe('profileFlags', () => {
  it('passes the --cpu-prof flags on to the workers with their values, in either form', () => {
    expect(
      profileFlags([
        '--max-old-space-size=512',
        '--cpu-prof',
        '--cpu-prof-dir',
        '/tmp/prof',
        '--cpu-prof-interval=200',
        '--import',
        'tsx',
      ]),
    ).toEqual(['--cpu-prof', '--cpu-prof-dir', '/tmp/prof', '--cpu-prof-interval=200']);
  });

  it('leaves out --cpu-prof-name, so that each worker writes a profile of its own', () => {
    expect(profileFlags(['--cpu-prof', '--cpu-prof-name', 'main.cpuprofile', '--cpu-prof-dir=p'])).toEqual([
      '--cpu-prof',
      '--cpu-prof-dir=p',
    ]);
    expect(profileFlags(['--cpu-prof', '--cpu-prof-name=main.cpuprofile'])).toEqual(['--cpu-prof']);
  });

  it('gives nothing when the parent is not profiled', () => {
    expect(profileFlags(['--import', 'tsx', '--max-semi-space-size=8'])).toEqual([]);
  });
});
