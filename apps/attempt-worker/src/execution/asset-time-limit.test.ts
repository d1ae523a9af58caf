import { describe, expect, it } from 'vitest';
import { assetTimeLimit } from './asset-time-limit.ts';

const NOW = Date.parse('2026-11-26T12:00:00.000Z');
const runEndingIn = (seconds: number, total = 600) => ({ run_timeout: { seconds: total, deadline: new Date(NOW + seconds * 1000).toISOString() } });

describe('assetTimeLimit', () => {
  it("is the runner's limit when nothing else is asked for", () => {
    expect(assetTimeLimit(900_000, { key: 'orders', timeout_seconds: null }, { run_timeout: null }, NOW)).toEqual({
      ms: 900_000,
      source: "the runner's limit, ASSET_TIMEOUT_MS (900 s)",
    });
  });

  it("takes the asset's timeout_seconds when it is less, and names it", () => {
    expect(assetTimeLimit(900_000, { key: 'orders', timeout_seconds: 2 }, runEndingIn(300), NOW)).toEqual({
      ms: 2000,
      source: 'timeout_seconds of asset "orders" in the manifest (2 s)',
    });
  });

  it("takes what is left of the run's timeout_seconds when that is less, and names it", () => {
    expect(assetTimeLimit(900_000, { key: 'orders', timeout_seconds: 60 }, runEndingIn(5, 30), NOW)).toEqual({
      ms: 5000,
      source: 'timeout_seconds of the run (30 s, from its start)',
    });
  });

  it("caps what the manifest asks for by the runner's limit", () => {
    expect(assetTimeLimit(4000, { key: 'orders', timeout_seconds: 86_400 }, { run_timeout: null }, NOW).source).toBe("the runner's limit, ASSET_TIMEOUT_MS (4 s)");
  });

  it("answers zero or less once the run's time has run out", () => {
    expect(assetTimeLimit(900_000, { key: 'orders', timeout_seconds: null }, runEndingIn(-3), NOW).ms).toBe(-3000);
  });
});
