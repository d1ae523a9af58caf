import { describe, expect, it } from 'vitest';
import { escapeControlCharacters, hasControlCharacters } from './index.ts';

describe('escapeControlCharacters', () => {
  it('makes a carriage return, CSI and OSC sequences, and bidirectional overrides visible', () => {
    const forged = 'ok\r2026-11-26 fake line\u001b[2J\u001b]0;owned\u0007\u009b31m\u202eevil';
    const escaped = escapeControlCharacters(forged);
    expect(escaped).toBe('ok\\r2026-11-26 fake line\\e[2J\\e]0;owned\\x07\\x9b31m\\u202eevil');
    expect(hasControlCharacters(escaped)).toBe(false);
    expect(hasControlCharacters(forged)).toBe(true);
  });

  it('keeps tabs, backslashes and every printable character, in any script', () => {
    const text = 'col\tcol \\n stays two characters; émoji 🎉 中文 ∑';
    expect(escapeControlCharacters(text)).toBe(text);
  });

  it('escapes every C0 control but tab, DEL and every C1 control', () => {
    for (let code = 0; code <= 0x9f; code++) {
      const char = String.fromCharCode(code);
      const unsafe = code < 0x20 ? code !== 0x09 : code >= 0x7f;
      expect([code, escapeControlCharacters(char) !== char]).toEqual([code, unsafe]);
    }
  });
});
