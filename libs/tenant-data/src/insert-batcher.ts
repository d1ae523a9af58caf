/**
 * Group commit for a stream of small inserts (an audit log): each `add` resolves once its
 * document is durably written, but documents that arrive while one write is in flight go
 * together in the next `insertMany`. Under no load a document is written at once, alone;
 * under load the database sees one write per batch instead of one per request.
 */
export class InsertBatcher<T> {
  private queue: Array<{ doc: T; settle: (error?: unknown) => void }> = [];
  private writing = false;

  constructor(
    private readonly insertMany: (docs: T[]) => Promise<void>,
    /** Most documents per write. Default 500. */
    private readonly maxBatch = 500,
  ) {}

  add(doc: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ doc, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        await this.insertMany(batch.map((entry) => entry.doc));
        for (const entry of batch) entry.settle();
      } catch (error) {
        // Every document of a failed write fails its caller: none is reported written unless it was.
        for (const entry of batch) entry.settle(error ?? new Error('insert failed'));
      }
    }
    this.writing = false;
  }
}
