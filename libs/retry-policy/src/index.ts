/**
 * The one back-off of the engine's retries (docs/decisions.md#one-back-off-for-every-retry):
 * the CLI's calls, the attempt-worker's worker API calls, a service's first MongoDB
 * connection, the supervisor's restarts and a webhook's deliveries.
 */

/** Waits that grow by `factor` from `firstMs`, none past `maxMs`, each with up to `jitter` of itself more at random. */
export interface Backoff {
  firstMs: number;
  factor: number;
  maxMs: number;
  /** 0.1: up to a tenth more, so that callers failing together do not all come back together. Default 0. */
  jitter?: number;
}

/** The wait after failed try number `tries` (1 for the first). */
export function backoffDelay(backoff: Backoff, tries: number, random: () => number = Math.random): number {
  // factor ** n overflows to Infinity for a long series, which Math.min caps like any other.
  const delay = Math.min(backoff.maxMs, backoff.firstMs * backoff.factor ** Math.max(0, tries - 1));
  return Math.round(delay * (1 + (backoff.jitter ?? 0) * random()));
}

export interface RetryOptions<T> {
  backoff: Backoff;
  /** Tries in all, the first included. Default: no limit but `deadline`. */
  maxTries?: number;
  /** No new try after this instant (`Date.now()` milliseconds): the last outcome stands. */
  deadline?: number;
  /** Whether a thrown error is tried again. Default: every error. */
  retryError?: (error: unknown) => boolean;
  /** Whether an answer is tried again (a 503). Default: none. */
  retryValue?: (value: T) => boolean;
  /** Called with an answer that is tried again, before the wait (to read out its body). */
  discard?: (value: T) => Promise<void> | void;
  /** The wait an answer asks for (`Retry-After`), instead of the back-off's. */
  waitOf?: (value: T) => number | undefined;
  /** Told of each wait before it starts. */
  onRetry?: (retry: { tries: number; delayMs: number; error?: unknown }) => void;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  random?: () => number;
}

/**
 * Runs `attempt` (given the try's number, from 1) until it answers an outcome that is not
 * tried again, or the tries or the deadline run out; then the last outcome stands: its
 * answer is returned, its error thrown.
 */
export async function retrying<T>(attempt: (tries: number) => Promise<T>, options: RetryOptions<T>): Promise<T> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const more = (tries: number) => tries < (options.maxTries ?? Number.POSITIVE_INFINITY) && (options.deadline === undefined || now() <= options.deadline);
  for (let tries = 1; ; tries += 1) {
    let value: T;
    try {
      value = await attempt(tries);
    } catch (error) {
      if (!more(tries) || !(options.retryError?.(error) ?? true)) throw error;
      const delayMs = backoffDelay(options.backoff, tries, options.random);
      options.onRetry?.({ tries, delayMs, error });
      await sleep(delayMs);
      continue;
    }
    if (!more(tries) || !(options.retryValue?.(value) ?? false)) return value;
    await options.discard?.(value);
    const delayMs = options.waitOf?.(value) ?? backoffDelay(options.backoff, tries, options.random);
    options.onRetry?.({ tries, delayMs });
    await sleep(delayMs);
  }
}
