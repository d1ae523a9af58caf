import { Transform } from 'node:stream';

/** The slowest a request or response body may move: fewer bytes than `minBytesPerSecond` over a window of `windowMs` cuts it off. */
export interface BodyRateLimits {
  minBytesPerSecond: number;
  windowMs: number;
}

/**
 * Bytes counted window by window (Apache's mod_reqtimeout `MinRate` does the same for
 * request bodies): a window that carried fewer bytes than the minimum rate's is too slow.
 * A body that moves nothing for a window (a client that never reads) is the slowest case.
 */
export class BodyRate {
  private windowStart: number;
  private bytes = 0;

  constructor(private readonly limits: BodyRateLimits, now: number) {
    this.windowStart = now;
  }

  add(bytes: number): void {
    this.bytes += bytes;
  }

  /** Ends the window at `now`: whether it carried too few bytes. The next one starts at `now`. */
  endWindow(now: number): boolean {
    const expected = (this.limits.minBytesPerSecond * (now - this.windowStart)) / 1000;
    const slow = this.bytes < expected;
    this.windowStart = now;
    this.bytes = 0;
    return slow;
  }
}

export class BodyTooSlowError extends Error {
  readonly code = 'BODY_TOO_SLOW';

  constructor(what: string, limits: BodyRateLimits) {
    super(`the ${what} moved fewer than ${limits.minBytesPerSecond} bytes/s over ${limits.windowMs} ms`);
  }
}

/** A pass-through that fails with BodyTooSlowError when a window carries fewer bytes than the minimum rate's; `start` begins the first window. */
export interface RateGuard extends Transform {
  /** Starts the windows (idempotent); a guard made with `startNow` false starts at its first byte, or here. */
  start(): void;
}

/**
 * A pass-through that fails with BodyTooSlowError when a window carries fewer bytes than
 * the minimum rate's. Put between a body's source and its reader, it counts what the
 * reader accepts: a slow reader holds it back as much as a slow sender. An upload's guard
 * starts when the service's connection starts reading (a request waiting for a connection
 * is not the client's slowness), a response's at once.
 */
export function rateGuard(limits: BodyRateLimits, what: string, startNow = true): RateGuard {
  let rate: BodyRate | undefined;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => clearInterval(timer);
  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      guard.start();
      rate!.add(chunk.length);
      callback(null, chunk);
    },
    flush(callback) {
      // The source has ended: what is left is in the reader's buffers, no longer upstream.
      stop();
      callback();
    },
    destroy(error, callback) {
      stop();
      callback(error);
    },
  }) as RateGuard;
  guard.start = () => {
    if (rate || guard.destroyed) return;
    rate = new BodyRate(limits, Date.now());
    timer = setInterval(() => {
      if (rate!.endWindow(Date.now())) guard.destroy(new BodyTooSlowError(what, limits));
    }, limits.windowMs);
    timer.unref();
  };
  if (startNow) guard.start();
  return guard;
}
