import type { HealthStatus } from '@envengine/contracts';

/** A readiness check: resolves true when the dependency answers. */
export type ReadinessCheck = () => Promise<boolean>;

/** Every check's answer (each cut off after 2 s): what `/readyz` says, and whether it is 200 or 503. */
export async function readinessReport(service: string, checks: Record<string, ReadinessCheck>): Promise<{ ready: boolean; body: HealthStatus }> {
  const results: HealthStatus['checks'] = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      results[name] = (await withTimeout(check(), 2000).catch(() => false)) ? 'ok' : 'down';
    }),
  );
  const ready = Object.values(results).every((result) => result === 'ok');
  return { ready, body: { status: ready ? 'ok' : 'unavailable', service, checks: results } };
}

/** What `/healthz` says: the process is alive. */
export function livenessBody(service: string): HealthStatus {
  return { status: 'ok', service, checks: {} };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
