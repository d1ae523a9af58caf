import { describe, expect, it } from 'vitest';
import { closestName, didYouMean, editDistance } from './index.ts';

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    expect(editDistance('refesh', 'refresh')).toBe(1);
    expect(editDistance('lsit', 'list')).toBe(1);
    expect(editDistance('lst', 'list')).toBe(1);
    expect(editDistance('envs', 'env')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('closestName', () => {
  const commands = ['list', 'get', 'create', 'delete', 'placement', 'pause', 'resume'];

  it('suggests the closest candidate for a typo', () => {
    expect(closestName('lst', commands)).toBe('list');
    expect(closestName('crate', commands)).toBe('create');
    expect(closestName('PAUSE', ['pause'])).toBe('pause');
    expect(closestName('refesh', ['refresh', 'nightly'])).toBe('refresh');
  });

  it('suggests nothing for a word far from every candidate, an exact name, or a pasted secret', () => {
    expect(closestName('deploy', commands)).toBeUndefined();
    expect(closestName('get', commands)).toBeUndefined();
    expect(closestName('x'.repeat(200), ['x'.repeat(199)])).toBeUndefined();
    expect(closestName('', commands)).toBeUndefined();
  });

  it('says it as a sentence, or not at all', () => {
    expect(didYouMean('lst', commands)).toBe(' Did you mean "list"?');
    expect(didYouMean('zzz', commands)).toBe('');
  });
});
