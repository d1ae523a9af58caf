import type { AttemptLogLine } from '@envengine/contracts';

const MAX_LINE_CHARS = 16_384;
const MAX_BATCH = 500;

/**
 * An attempt's log lines, numbered from 0 and sent in batches (every `intervalMs`, or at
 * once when a batch is full). A batch that fails is sent again with the same numbers, so
 * the server stores each line once.
 */
export class LogShipper {
  private seq = 0;
  private pending: AttemptLogLine[] = [];
  private sending: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly send: (lines: AttemptLogLine[]) => Promise<void>,
    intervalMs: number,
    private readonly onError: (error: Error) => void,
  ) {
    this.timer = setInterval(() => void this.flush(), intervalMs);
  }

  add(asset: string | null, message: string): void {
    const text = message.length > MAX_LINE_CHARS ? `${message.slice(0, MAX_LINE_CHARS - 15)}… (truncated)` : message;
    this.pending.push({ seq: this.seq++, at: new Date().toISOString(), asset, message: text });
    if (this.pending.length >= MAX_BATCH) void this.flush();
  }

  /** Sends what is buffered; resolves when everything added so far was sent (or given up on). */
  flush(): Promise<void> {
    this.sending = this.sending.then(async () => {
      while (this.pending.length > 0) {
        const batch = this.pending.slice(0, MAX_BATCH);
        try {
          await this.send(batch);
          this.pending.splice(0, batch.length);
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
    await this.flush();
  }
}
