import type { Output } from './output.ts';

const SEPARATOR = ' · ';

/**
 * A status line (`part · part · … · 1.2s`) in at most `width` characters (the last column
 * is left free: a terminal wraps at it): the longest of the middle parts is shortened with
 * `…` first, then the first one; the last part (the elapsed time, with its unit) is kept
 * whole. A line that fits is unchanged.
 */
export function fitStatusLine(text: string, width: number): string {
  const parts = text.split(SEPARATOR);
  const length = () => parts.join(SEPARATOR).length;
  if (length() <= width || parts.length < 2) return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
  const last = parts.length - 1;
  const shortest = 6;
  while (length() > width) {
    // The longest middle part that can still give characters, else the first part.
    const middle = parts.slice(1, last).map((part, index) => [index + 1, part.length] as const).filter(([, size]) => size > shortest).sort((a, b) => b[1] - a[1])[0];
    const index = middle ? middle[0] : parts[0]!.length > shortest ? 0 : -1;
    if (index === -1) break;
    const part = parts[index]!;
    const keep = Math.max(shortest - 1, part.length - (length() - width) - 1);
    parts[index] = `${part.replace(/…$/, '').slice(0, keep)}…`;
  }
  const fitted = parts.join(SEPARATOR);
  // Past what shortening can give (a very narrow terminal): the elapsed time alone, or nothing.
  return fitted.length <= width ? fitted : parts[last]!.length <= width ? parts[last]! : '';
}

/**
 * One line of progress on stderr: rewritten in place on a terminal, printed again only
 * when it changes otherwise (so that a CI log shows each change once).
 */
export class StatusLine {
  private shown = false;
  private last = '';

  constructor(private readonly out: Output) {}

  update(text: string): void {
    if (this.out.stderrIsTty) {
      const columns = this.out.io.stderr.columns ?? 100;
      this.out.io.stderr.write(`\r\u001b[K${this.out.paint(fitStatusLine(text, columns - 1), 'blue', 'err')}`);
      this.shown = true;
      return;
    }
    // Without a terminal, elapsed time would make every line new: compare without it.
    const key = text.replace(/ · [\d.]+s$/, '');
    if (key !== this.last) this.out.info(text);
    this.last = key;
  }

  /** Removes the line before other output. */
  clear(): void {
    if (this.shown) this.out.io.stderr.write('\r\u001b[K');
    this.shown = false;
  }

  done(): void {
    this.clear();
  }
}
