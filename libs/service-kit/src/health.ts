import type { Express } from 'express';
import type { HealthStatus } from '@envengine/contracts';

/** A readiness check: resolves true when the dependency answers. */
export type ReadinessCheck = () => Promise<boolean>;

/**
 * `/healthz` says the process is alive; `/readyz` says whether its dependencies answer
 * (503 while one is down), for orchestrators and for the stack's start-up wait.
 */
export function mountHealthRoutes(app: Express, service: string, checks: Record<string, ReadinessCheck>): void {
  app.get('/healthz', (_req, res) => {
    res.json({ data: { status: 'ok', service, checks: {} } satisfies HealthStatus });
  });
  app.get('/readyz', async (_req, res) => {
    const results: HealthStatus['checks'] = {};
    await Promise.all(
      Object.entries(checks).map(async ([name, check]) => {
        results[name] = (await withTimeout(check(), 2000).catch(() => false)) ? 'ok' : 'down';
      }),
    );
    const ready = Object.values(results).every((result) => result === 'ok');
    const body: HealthStatus = { status: ready ? 'ok' : 'unavailable', service, checks: results };
    res.status(ready ? 200 : 503).json({ data: body });
  });
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
