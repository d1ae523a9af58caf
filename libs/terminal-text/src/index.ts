// A tenant's text shown on someone's terminal or page (log lines, errors): control
// characters made visible, so that no line can move the cursor, clear the screen, set a
// window title, hide itself behind a carriage return, or reorder what is read (Trojan
// Source's bidirectional overrides). Tab stays as it is.

/**
 * C0 controls but tab, DEL, C1 controls (U+0080-U+009F, where U+009B is a one-byte CSI to
 * some terminals), the bidirectional embeddings, overrides and isolates, and the line and
 * paragraph separators.
 */
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\u001b': '\\e' };

/** `text` with every unsafe character written as an escape (`\n`, `\r`, `\e`, `\xNN`, `\uNNNN`); a backslash stays as it is. */
export function escapeControlCharacters(text: string): string {
  return text.replace(UNSAFE, (char) => {
    const named = NAMED[char];
    if (named !== undefined) return named;
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Whether `text` holds a character that `escapeControlCharacters` would escape. */
export function hasControlCharacters(text: string): boolean {
  UNSAFE.lastIndex = 0;
  const found = UNSAFE.test(text);
  UNSAFE.lastIndex = 0;
  return found;
}
