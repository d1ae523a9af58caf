import { MAX_LOG_MESSAGE_CHARS, type AttemptLogLine } from '@envengine/contracts';
import { SecretMask } from '@envengine/secret-masking';

export { MASK } from '@envengine/secret-masking';

const MAX_BATCH = 500;
/**
 * Bytes of one batch's lines as JSON, at most: half the API's default body limit (1 MiB),
 * so that 500 long lines never make a body the gateway refuses (a 413 would be retried,
 * never sent, and every later line would wait behind it).
 */
export const MAX_BATCH_BYTES = 512 * 1024;

const bytesOf = (line: AttemptLogLine) => Buffer.byteLength(JSON.stringify(line)) + 1;

export interface LogLimits {
  /** Lines kept per attempt: the first ones and the last tenth (at most 1,000), with one marker line between them saying how many were dropped. */
  maxLines: number;
  /** Characters of messages kept per attempt (a UTF-16 count, close to bytes for logs). */
  maxChars: number;
}

/**
 * An attempt's log lines, numbered from 0 and sent in batches (every `intervalMs`, or at
 * once when a batch is full). A batch that fails is sent again with the same numbers, so
 * the server stores each line once. Every secret value resolved for the attempt is masked
 * before a line is kept (as CI runners mask registered secrets), and the attempt's log is
 * capped in lines and characters: past the head, the last lines are held and sent at the
 * end after one marker line saying how many between them were dropped.
 */
export class LogShipper {
  private seq = 0;
  private chars = 0;
  /** Once the head is full, every later line goes to the tail, even one that would fit. */
  private headFull = false;
  private readonly headLines: number;
  private readonly headChars: number;
  /** The last lines past the head, at most `tailLines` of `tailCharsMax` characters; older ones are dropped and counted. */
  private tail: Omit<AttemptLogLine, 'seq'>[] = [];
  private tailStart = 0;
  private tailChars = 0;
  private dropped = 0;
  private readonly tailLines: number;
  private readonly tailCharsMax: number;
  private pending: AttemptLogLine[] = [];
  /** The JSON size of each pending line, and their sum. */
  private pendingBytes: number[] = [];
  private pendingTotal = 0;
  private sending: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  /**
   * The attempt's secret values, masked in time linear in a line's length whatever their
   * number: this runs on the runner's main loop, which also sends every attempt's heartbeats.
   */
  private readonly secrets = new SecretMask();

  constructor(
    private readonly send: (lines: AttemptLogLine[]) => Promise<void>,
    intervalMs: number,
    private readonly onError: (error: Error) => void,
    private readonly limits: LogLimits,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    // A tenth of each limit for the tail (at most 1,000 lines); the rest for the head. The
    // marker is the one line past `maxLines` that the worker API keeps room for.
    this.tailLines = Math.min(1000, Math.floor(limits.maxLines / 10));
    this.tailCharsMax = Math.floor(limits.maxChars / 10);
    this.headLines = limits.maxLines - this.tailLines;
    this.headChars = limits.maxChars - this.tailCharsMax;
  }

  /**
   * Registers secret values to mask from now on: each value, and each line of a multi-line
   * one. Past the mask's bound it throws (MaskLimitError), registering none of them, so the
   * resolution that asked fails before anyone has the values.
   */
  maskSecrets(values: readonly unknown[]): void {
    this.secrets.register(values);
  }

  /** Adds a message, one log line per line of it (a stack trace stays readable; the server escapes what control characters remain). */
  add(asset: string | null, message: string): void {
    const lines = message.split('\n');
    if (lines.length > 1 && lines.at(-1) === '') lines.pop();
    for (const line of lines) this.addLine(asset, line.endsWith('\r') ? line.slice(0, -1) : line);
  }

  private addLine(asset: string | null, message: string): void {
    const head = this.secrets.maskHead(message, MAX_LOG_MESSAGE_CHARS);
    const text = head.cut ? `${head.text.slice(0, MAX_LOG_MESSAGE_CHARS - 15)}… (truncated)` : head.text;
    const line = { at: new Date().toISOString(), asset, message: text };
    if (!this.headFull && this.seq < this.headLines && this.chars + text.length <= this.headChars) {
      this.chars += text.length;
      this.queue({ seq: this.seq++, ...line });
      return;
    }
    // Past the head: the last lines are kept until the end, for a failure's tail is what matters.
    this.headFull = true;
    this.tail.push(line);
    this.tailChars += text.length;
    while (this.tailStart < this.tail.length && (this.tail.length - this.tailStart > this.tailLines || this.tailChars > this.tailCharsMax)) {
      this.tailChars -= this.tail[this.tailStart++]!.message.length;
      this.dropped++;
    }
    // Dropped lines are let go of in bulk: constant time a line, however long the flood.
    if (this.tailStart > 1024 && this.tailStart * 2 > this.tail.length) {
      this.tail = this.tail.slice(this.tailStart);
      this.tailStart = 0;
    }
  }

  private queue(line: AttemptLogLine): void {
    this.pending.push(line);
    this.pendingBytes.push(bytesOf(line));
    this.pendingTotal += this.pendingBytes.at(-1)!;
    if (this.pending.length >= MAX_BATCH || this.pendingTotal >= MAX_BATCH_BYTES) void this.flush();
  }

  /** The kept tail, after one marker line saying how many lines were dropped when there were any. */
  private releaseTail(): void {
    const kept = this.tail.slice(this.tailStart);
    if (this.dropped > 0) {
      const message = `… log cut: ${this.dropped} lines dropped here. This attempt's log keeps ${this.limits.maxLines} lines and ${this.limits.maxChars} characters: the first ${this.seq} lines and the last ${kept.length} are kept`;
      this.queue({ seq: this.seq++, at: new Date().toISOString(), asset: null, message });
      this.dropped = 0;
    }
    for (const line of kept) this.queue({ seq: this.seq++, ...line });
    this.tail = [];
    this.tailStart = 0;
    this.tailChars = 0;
  }

  /** At most `maxChars` of `message`, every secret value registered so far replaced by `***` (for errors as for log lines). */
  maskedHead(message: string, maxChars: number): { text: string; cut: boolean } {
    return this.secrets.maskHead(message, maxChars);
  }

  /** Sends what is buffered; resolves when everything added so far was sent (or given up on). */
  flush(): Promise<void> {
    this.sending = this.sending.then(async () => {
      while (this.pending.length > 0) {
        // At most MAX_BATCH lines and MAX_BATCH_BYTES, and at least one line (one is at most ~100 KB).
        let count = 0;
        let bytes = 0;
        while (count < this.pending.length && count < MAX_BATCH && (count === 0 || bytes + this.pendingBytes[count]! <= MAX_BATCH_BYTES)) bytes += this.pendingBytes[count++]!;
        const batch = this.pending.slice(0, count);
        try {
          await this.send(batch);
          this.pending.splice(0, count);
          this.pendingBytes.splice(0, count);
          this.pendingTotal -= bytes;
        } catch (error) {
          this.onError(error as Error);
          return;
        }
      }
    });
    return this.sending;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.releaseTail();
    await this.flush();
  }
}
