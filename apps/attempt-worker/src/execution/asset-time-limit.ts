import type { AttemptPlan, PlannedAsset } from '@envengine/contracts';

/** An asset's time limit, and which of the limits it is (named in the error when it fires). */
export interface AssetTimeLimit {
  ms: number;
  /** E.g. `timeout_seconds of asset "orders" (30 s)`. */
  source: string;
}

/**
 * The least of the limits on one asset: the runner's own (`ASSET_TIMEOUT_MS`, the
 * operator's cap), the asset's `timeout_seconds` in the manifest, and what is left of
 * the run's `timeout_seconds` (counted from the run's start, across its attempts). Zero
 * or less: the run's time ran out before the asset started.
 */
export function assetTimeLimit(runnerLimitMs: number, asset: Pick<PlannedAsset, 'key' | 'timeout_seconds'>, plan: Pick<AttemptPlan, 'run_timeout'>, now: number): AssetTimeLimit {
  const limits: AssetTimeLimit[] = [{ ms: runnerLimitMs, source: `the runner's limit, ASSET_TIMEOUT_MS (${formatSeconds(runnerLimitMs)})` }];
  if (asset.timeout_seconds !== null) {
    limits.push({ ms: asset.timeout_seconds * 1000, source: `timeout_seconds of asset "${asset.key}" in the manifest (${asset.timeout_seconds} s)` });
  }
  if (plan.run_timeout !== null) {
    limits.push({ ms: Date.parse(plan.run_timeout.deadline) - now, source: `timeout_seconds of the run (${plan.run_timeout.seconds} s, from its start)` });
  }
  // The first of equal limits wins: the runner's, then the asset's, then the run's.
  return limits.reduce((least, limit) => (limit.ms < least.ms ? limit : least));
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
