import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { drainRefusedBody } from './refused-body.ts';

afterEach(() => {
  vi.useRealTimers();
});

/** A body being drained within `limits`, and whether the drain has answered yet. */
function draining(limits: { bytes: number; deadlineMs: number }) {
  const body = new PassThrough();
  const state = { drained: false };
  const done = drainRefusedBody(body, limits).then(() => {
    state.drained = true;
  });
  return { body, state, done };
}

describe('drainRefusedBody', () => {
  it('waits for the body to end when it ends within the bound', async () => {
    const { body, state, done } = draining({ bytes: 1024, deadlineMs: 60_000 });
    body.write(Buffer.alloc(500));
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.drained).toBe(false);
    body.end(Buffer.alloc(100));
    await done;
    expect(body.readableEnded).toBe(true);
  });

  it('answers once more than the bound has been read, and drops what comes after', async () => {
    const { body, state, done } = draining({ bytes: 1024, deadlineMs: 60_000 });
    body.write(Buffer.alloc(1000));
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.drained).toBe(false);
    body.write(Buffer.alloc(100));
    await done;
    expect(body.readableEnded).toBe(false);
    // Still flowing: what the sender writes after the answer is read and dropped, not buffered.
    body.write(Buffer.alloc(64 * 1024));
    await new Promise((resolve) => setImmediate(resolve));
    expect(body.readableLength).toBe(0);
  });

  it('answers at its deadline when the sender stalls', async () => {
    vi.useFakeTimers();
    const { body, state, done } = draining({ bytes: 1024, deadlineMs: 5_000 });
    body.write(Buffer.alloc(10));
    await vi.advanceTimersByTimeAsync(4_999);
    expect(state.drained).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await done;
    expect(state.drained).toBe(true);
  });

  it('answers at once when the body is gone', async () => {
    const body = new PassThrough();
    const draining = drainRefusedBody(body, { bytes: 1024, deadlineMs: 60_000 });
    body.destroy(new Error('the client went away'));
    await expect(draining).resolves.toBeUndefined();
    await expect(drainRefusedBody(body)).resolves.toBeUndefined();
  });
});
