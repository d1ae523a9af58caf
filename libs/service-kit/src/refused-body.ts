import type { Readable } from 'node:stream';
import { ApiError } from './api-error.ts';

/** How much more of a refused request body is read before the answer, at most. */
export const DRAINED_BEFORE_ANSWER_BYTES = 4 * 1024 * 1024;
/** How long the rest is waited for, at most: a sender that stalls is answered all the same. */
export const DRAIN_DEADLINE_MS = 5_000;

export interface DrainLimits {
  bytes: number;
  deadlineMs: number;
}

/**
 * Reads and drops the rest of a refused request body before its answer is written, up to
 * `limits.bytes` more or `limits.deadlineMs`, whichever comes first. Answered (with
 * `Connection: close`) while its sender was still writing, the connection closed under the
 * sender's write, and a proxy in front (the gateway) saw a reset instead of the answer and
 * said 503 (seen in CI with a tar bomb whose last megabyte was still on its way). Past
 * either bound the answer goes out anyway: the sender is not made to send the rest, and a
 * sender that stalls does not hold the request open.
 */
export async function drainRefusedBody(body: Readable, limits: DrainLimits = { bytes: DRAINED_BEFORE_ANSWER_BYTES, deadlineMs: DRAIN_DEADLINE_MS }): Promise<void> {
  if (body.readableEnded || body.destroyed) return;
  await new Promise<void>((resolve) => {
    let dropped = 0;
    const done = () => {
      clearTimeout(deadline);
      body.off('data', onData);
      body.off('end', done);
      body.off('close', done);
      body.off('error', done);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > limits.bytes) done();
    };
    const deadline = setTimeout(done, limits.deadlineMs);
    body.on('data', onData);
    body.once('end', done);
    body.once('close', done);
    body.once('error', done);
    // Unpiped, the body is paused; flowing, what comes after the bound is dropped too.
    body.resume();
  });
}

/**
 * The error of an upload that stopped before its end (its sender closed the connection):
 * said to a client that is most likely gone, and what the logs and metrics record.
 */
export function uploadCutOff(): ApiError {
  return new ApiError('invalid_request', 'The upload ended before its last byte (the connection was closed).', {
    details: [{ path: '(body)', message: 'was cut off' }],
  });
}

/**
 * Calls `onCutOff` once if `upload` closes or fails before its end. Piping passes no error
 * on, so a reader piped from an upload whose sender went away waits for good on a body that
 * never ends; each place that pipes an upload ends its own work here. Returns the detach.
 */
export function whenUploadCutOff(upload: Readable, onCutOff: () => void): () => void {
  const check = () => {
    if (!upload.readableEnded) onCutOff();
  };
  upload.once('error', check);
  upload.once('close', check);
  return () => {
    upload.off('error', check);
    upload.off('close', check);
  };
}
