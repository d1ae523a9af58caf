import { describe, expect, it } from 'vitest';
import { idFloorAt } from '@envengine/resource-ids';
import { clockSkewOf, MINT_CLOCK_TOLERANCE_MS } from './worker-api.service.ts';

describe("a materialization id's time against the engine's clock", () => {
  const started = new Date('2026-11-28T12:00:00.000Z');
  const now = started.getTime() + 60_000;

  it('accepts an id minted after its attempt started and not after now, each within the tolerance', () => {
    for (const at of [started.getTime(), now, started.getTime() - MINT_CLOCK_TOLERANCE_MS, now + MINT_CLOCK_TOLERANCE_MS]) {
      expect(clockSkewOf(idFloorAt('mat', at), started, now)).toBeNull();
    }
  });

  it('names an id minted before its attempt started, or after now, past the tolerance', () => {
    expect(clockSkewOf(idFloorAt('mat', started.getTime() - MINT_CLOCK_TOLERANCE_MS - 1000), started, now)).toMatch(/31 s before its attempt started \(2026-11-28T12:00:00.000Z/);
    expect(clockSkewOf(idFloorAt('mat', now + MINT_CLOCK_TOLERANCE_MS + 1000), started, now)).toMatch(/31 s after the engine's now/);
  });

  it('checks only the future for an attempt with no start time', () => {
    expect(clockSkewOf(idFloorAt('mat', 0), null, now)).toBeNull();
  });
});
