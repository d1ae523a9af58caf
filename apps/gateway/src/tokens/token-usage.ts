/**
 * When each API token was last let in, kept in memory and written in one batch a period:
 * a request never waits for it, and a token used a thousand times a minute costs one
 * write a period. What is in memory when a gateway dies is lost; `last_used_at` is a hint.
 */
export class TokenUsage {
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (usedAt: ReadonlyMap<string, Date>) => Promise<void>,
    private readonly onError: (error: Error) => void,
    private readonly now: () => Date = () => new Date(),
  ) {}

  seen(tokenId: string): void {
    this.pending.set(tokenId, this.now());
  }

  start(periodMs: number): void {
    this.timer = setInterval(() => void this.flush(), periodMs);
    this.timer.unref();
  }

  /** Writes what was seen since the last write; a failed batch is merged back for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.pending.size === 0) return;
      const batch = this.pending;
      this.pending = new Map();
      try {
        await this.write(batch);
      } catch (error) {
        for (const [tokenId, at] of batch) if (!this.pending.has(tokenId)) this.pending.set(tokenId, at);
        this.onError(error as Error);
      }
    });
    return this.flushing;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
