import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MASK, MaskLimitError, SecretMask } from './index.ts';

/** The meaning of masking, the slow way: every character that some occurrence of some string covers is hidden, each covered run as one MASK. */
function maskedByReference(text: string, strings: readonly string[]): string {
  const hidden = new Array<boolean>(text.length).fill(false);
  for (const secret of strings) {
    for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) hidden.fill(true, at, at + secret.length);
  }
  let out = '';
  for (let index = 0; index < text.length; index++) {
    if (!hidden[index]) out += text[index];
    else if (index === 0 || !hidden[index - 1]) out += MASK;
  }
  return out;
}

describe('SecretMask', () => {
  it('masks each registered value, and each line of a multi-line one', () => {
    const mask = new SecretMask();
    mask.register(['hunter2-password', '-----BEGIN KEY-----\nAAAABBBBCCCC\n-----END KEY-----', 'abc', { token: 'json-value' }]);
    expect(mask.mask('the password is hunter2-password, twice: hunter2-password')).toBe(`the password is ${MASK}, twice: ${MASK}`);
    expect(mask.mask('AAAABBBBCCCC')).toBe(MASK);
    expect(mask.mask('abc stays: too short to mask')).toBe('abc stays: too short to mask');
    expect(mask.mask('{"token":"json-value"}')).toBe(MASK);
  });

  it('masks the longer of two overlapping secrets whole, and overlapping occurrences as one range', () => {
    const mask = new SecretMask();
    mask.register(['token', 'token-with-suffix', 'abcd', 'bcde']);
    expect(mask.mask('x token-with-suffix y')).toBe(`x ${MASK} y`);
    expect(mask.mask('xabcdey')).toBe(`x${MASK}y`);
    // A string that ends inside another's path: the automaton stands in "abcab", a prefix of the longer one.
    const inside = new SecretMask();
    inside.register(['abcabcabc', 'bcab']);
    expect(inside.mask('xabcabx')).toBe(`xa${MASK}x`);
  });

  it('masks by code unit: a combining mark or an emoji after a secret does not hide it', () => {
    const mask = new SecretMask();
    mask.register(['abcd', 'p@ss😀word']);
    expect(mask.mask('xabcd\u0301y')).toBe(`x${MASK}\u0301y`);
    expect(mask.mask('p@ss😀word\u200d')).toBe(`${MASK}\u200d`);
  });

  it('agrees with the slow reference on any text and strings, over several batches', () => {
    fc.assert(
      fc.property(
        // Two letters mostly, so that strings overlap, contain each other and end inside each other's paths.
        fc.array(fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'a', 'b', '\u0301'), minLength: 4, maxLength: 9 }), { maxLength: 6 }), { maxLength: 5 }),
        fc.string({ unit: fc.constantFrom('a', 'b', 'a', 'b', 'x', '\u0301'), maxLength: 80 }),
        (batches, text) => {
          const mask = new SecretMask();
          for (const batch of batches) mask.register(batch);
          expect(mask.mask(text)).toBe(maskedByReference(text, batches.flat()));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('scans a text in steps linear in its length, whatever the number of strings', () => {
    const strings = Array.from({ length: 4000 }, (_, index) => `s${index.toString(36).padStart(4, 'a')}`);
    const mask = new SecretMask();
    // Many batches, as an asset resolving again after each rotation would register them.
    for (let from = 0; from < strings.length; from += 40) mask.register(strings.slice(from, from + 40));
    const line = strings.slice(0, 500).join(' a');
    mask.mask(line);
    // Each automaton takes at most two transitions a code unit; a batch never stays an automaton of its own.
    expect(mask.size.automata).toBeLessThanOrEqual(Math.ceil(Math.log2(strings.length / 40)) + 1);
    expect(mask.lastScanSteps).toBeLessThanOrEqual(2 * line.length * mask.size.automata);
    // Of the same 4-character alphabet ("aaaa", "aaab", ...): the failure links' worst case.
    const dense = new SecretMask();
    dense.register(Array.from({ length: 256 }, (_, index) => index.toString(4).padStart(4, '0')));
    dense.register(['0'.repeat(400)]);
    const text = '0'.repeat(399) + '1'.repeat(5000);
    expect(dense.mask(text)).toBe(MASK);
    expect(dense.lastScanSteps).toBeLessThanOrEqual(2 * text.length * dense.size.automata);
  });

  it('masks the head of a long text, reading only as far as a secret starting there can reach', () => {
    const mask = new SecretMask();
    mask.register(['the-secret-value']);
    const long = `${'x'.repeat(95)}the-secret-value${'y'.repeat(1_000_000)}the-secret-value`;
    expect(mask.maskHead(long, 100)).toEqual({ text: `${'x'.repeat(95)}${MASK}${'y'.repeat(2)}`, cut: true });
    expect(mask.lastScanSteps).toBeLessThanOrEqual(2 * (100 + 'the-secret-value'.length));
    expect(mask.maskHead('short the-secret-value', 100)).toEqual({ text: `short ${MASK}`, cut: false });
  });

  it('refuses a batch past its limits whole, and keeps masking what it had', () => {
    const mask = new SecretMask({ maxStrings: 3, maxCharacters: 100 });
    mask.register(['first-secret']);
    expect(() => mask.register(['a-second', 'a-third', 'a-fourth'])).toThrow(MaskLimitError);
    expect(() => mask.register(['x'.repeat(101)])).toThrow(/at most 3 strings of 100 characters/);
    expect(mask.size.strings).toBe(1);
    expect(mask.mask('first-secret a-second')).toBe(`${MASK} a-second`);
    // The same values again add nothing, so they fit.
    mask.register(['first-secret', 'first-secret']);
  });
});
