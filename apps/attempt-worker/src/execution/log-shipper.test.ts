import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptLogLine } from '@envengine/contracts';
import { LogShipper, MASK, MAX_BATCH_BYTES } from './log-shipper.ts';

const shippers: LogShipper[] = [];
afterEach(async () => {
  await Promise.all(shippers.splice(0).map((shipper) => shipper.close()));
});

function shipper(limits = { maxLines: 1000, maxChars: 1_000_000 }) {
  const sent: AttemptLogLine[] = [];
  const logs = new LogShipper(async (lines) => void sent.push(...lines), 60_000, () => undefined, limits);
  shippers.push(logs);
  return { logs, sent };
}

describe('LogShipper', () => {
  it('masks every registered secret value, and each line of a multi-line one', async () => {
    const { logs, sent } = shipper();
    logs.add('a', 'before: hunter2-password');
    logs.maskSecrets(['hunter2-password', '-----BEGIN KEY-----\nAAAABBBBCCCC\n-----END KEY-----', 'abc']);
    logs.add('a', 'the password is hunter2-password, twice: hunter2-password');
    logs.add('a', 'AAAABBBBCCCC');
    logs.add('a', 'abc stays: too short to mask');
    await logs.flush();
    expect(sent.map((line) => line.message)).toEqual([
      'before: hunter2-password',
      `the password is ${MASK}, twice: ${MASK}`,
      MASK,
      'abc stays: too short to mask',
    ]);
  });

  it('keeps each line of a multi-line message as a line of its own, each masked', async () => {
    const { logs, sent } = shipper();
    logs.maskSecrets(['hunter2-password']);
    logs.add('a', 'Error: password=hunter2-password\r\n    at run (assets/a.js:3:9)\n');
    await logs.flush();
    expect(sent.map((line) => line.message)).toEqual([`Error: password=${MASK}`, '    at run (assets/a.js:3:9)']);
    expect(logs.maskedHead('thrown: hunter2-password', 100)).toEqual({ text: `thrown: ${MASK}`, cut: false });
  });

  it('masks the longer of two overlapping secrets whole', async () => {
    const { logs, sent } = shipper();
    logs.maskSecrets(['token', 'token-with-suffix']);
    logs.add(null, 'x token-with-suffix y');
    await logs.flush();
    expect(sent[0]!.message).toBe(`x ${MASK} y`);
  });

  it('keeps every batch within MAX_BATCH_BYTES as JSON, however long its lines, and sends every line once, in order', async () => {
    const batches: AttemptLogLine[][] = [];
    const logs = new LogShipper(async (lines) => void batches.push(lines), 60_000, () => undefined, { maxLines: 10_000, maxChars: 100_000_000 });
    shippers.push(logs);
    // 1,000 lines of 3,000 characters (and quotes, escaped to two bytes each): two 500-line batches would be ~3.5 MB each.
    for (let i = 0; i < 1000; i += 1) logs.add('big', `${i} ${'"'.repeat(1500)}${'x'.repeat(1500)}`);
    await logs.flush();
    for (const batch of batches) expect(Buffer.byteLength(JSON.stringify({ lines: batch }))).toBeLessThanOrEqual(MAX_BATCH_BYTES + 100);
    expect(batches.length).toBeGreaterThan(2);
    expect(batches.flat().map((line) => line.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it('keeps the head and the tail of a long log, with one marker line between them saying how many lines were dropped', async () => {
    const { logs, sent } = shipper({ maxLines: 100, maxChars: 1_000_000 });
    for (let index = 0; index < 5000; index++) logs.add(null, `line ${index}`);
    await logs.flush();
    // The tail is held until the end.
    expect(sent.map((line) => line.message)).toEqual(Array.from({ length: 90 }, (_, index) => `line ${index}`));
    await logs.close();
    expect(sent.map((line) => line.message)).toEqual([
      ...Array.from({ length: 90 }, (_, index) => `line ${index}`),
      expect.stringMatching(/^… log cut: 4900 lines dropped here\. .*keeps 100 lines .*the first 90 lines and the last 10 are kept$/),
      ...Array.from({ length: 10 }, (_, index) => `line ${4990 + index}`),
    ]);
    expect(sent.map((line) => line.seq)).toEqual(Array.from({ length: 101 }, (_, index) => index));
  });

  it('sends every line, with no marker, when the log ends within its limits though past its head', async () => {
    const { logs, sent } = shipper({ maxLines: 100, maxChars: 1_000_000 });
    for (let index = 0; index < 95; index++) logs.add(null, `line ${index}`);
    await logs.close();
    expect(sent.map((line) => line.message)).toEqual(Array.from({ length: 95 }, (_, index) => `line ${index}`));
  });

  it('cuts the log at its character limit, keeping a tail within a tenth of it', async () => {
    const { logs, sent } = shipper({ maxLines: 1000, maxChars: 100 });
    for (let index = 0; index < 20; index++) logs.add(null, `${index}`.padStart(10, '0'));
    await logs.close();
    expect(sent.map((line) => line.message)).toEqual([
      ...Array.from({ length: 9 }, (_, index) => `${index}`.padStart(10, '0')),
      expect.stringMatching(/^… log cut: 10 lines dropped here\. .*100 characters/),
      '0000000019',
    ]);
  });

  it('holds a flood past its head in constant room: the tail stays at its bound', async () => {
    const { logs, sent } = shipper({ maxLines: 20, maxChars: 1_000_000 });
    for (let index = 0; index < 50_000; index++) logs.add(null, `flood ${index}`);
    await logs.close();
    expect(sent).toHaveLength(21);
    expect(sent.at(-1)!.message).toBe('flood 49999');
    expect(sent[18]!.message).toMatch(/^… log cut: 49980 lines dropped/);
  });
});
