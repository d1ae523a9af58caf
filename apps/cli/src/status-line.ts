import type { Output } from './output.ts';

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
      this.out.io.stderr.write(`\r\u001b[K${this.out.paint(text.slice(0, columns - 1), 'blue', 'err')}`);
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
