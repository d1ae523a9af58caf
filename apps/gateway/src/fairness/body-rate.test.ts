import { pipeline } from 'node:stream/promises';
import { PassThrough, Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BodyRate, BodyTooSlowError, rateGuard } from './body-rate.ts';

describe('BodyRate', () => {
  it('is too slow for a window under the minimum rate, and not for one at it', () => {
    const rate = new BodyRate({ minBytesPerSecond: 100, windowMs: 1000 }, 0);
    rate.add(100);
    expect(rate.endWindow(1000)).toBe(false);
    rate.add(99);
    expect(rate.endWindow(2000)).toBe(true);
  });

  it('counts each window afresh, in proportion to its length', () => {
    const rate = new BodyRate({ minBytesPerSecond: 100, windowMs: 1000 }, 0);
    rate.add(1000);
    expect(rate.endWindow(1000)).toBe(false);
    // The earlier window's surplus does not carry over.
    expect(rate.endWindow(2000)).toBe(true);
    rate.add(150);
    expect(rate.endWindow(3500)).toBe(false);
  });

  it('is too slow for a window that moved nothing', () => {
    const rate = new BodyRate({ minBytesPerSecond: 1, windowMs: 1000 }, 0);
    expect(rate.endWindow(1000)).toBe(true);
  });
});

describe('rateGuard', () => {
  it('passes a body that moves fast enough through unchanged', async () => {
    const chunks: Buffer[] = [];
    await pipeline(
      Readable.from([Buffer.from('a'.repeat(1000)), Buffer.from('b'.repeat(1000))]),
      rateGuard({ minBytesPerSecond: 1, windowMs: 50 }, 'response body'),
      new Writable({ write: (chunk: Buffer, _encoding, callback) => void (chunks.push(chunk), callback()) }),
    );
    expect(Buffer.concat(chunks).toString()).toBe('a'.repeat(1000) + 'b'.repeat(1000));
  });

  it('fails a body whose reader stops reading, naming the rate', async () => {
    const source = new PassThrough();
    source.write(Buffer.alloc(64 * 1024));
    const stalled = new Writable({ highWaterMark: 1, write: () => undefined });
    const failure = await pipeline(source, rateGuard({ minBytesPerSecond: 10, windowMs: 50 }, 'response body'), stalled).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(BodyTooSlowError);
    expect((failure as Error).message).toBe('the response body moved fewer than 10 bytes/s over 50 ms');
    expect(source.destroyed).toBe(true);
  });

  it('starts counting at the first byte, or when told, if not made started', async () => {
    const guard = rateGuard({ minBytesPerSecond: 1000, windowMs: 20 }, 'upload', false);
    const source = new PassThrough();
    source.pipe(guard);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(guard.destroyed).toBe(false);
    guard.start();
    await new Promise((resolve) => guard.once('error', resolve));
    expect(guard.destroyed).toBe(true);
  });

  it('fails a body whose sender drips', async () => {
    const source = new PassThrough();
    const drip = setInterval(() => source.write('x'), 5);
    try {
      const failure = await pipeline(source, rateGuard({ minBytesPerSecond: 1000, windowMs: 50 }, 'request body'), new PassThrough().resume()).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(BodyTooSlowError);
    } finally {
      clearInterval(drip);
    }
  });
});
