import type { Express } from 'express';
import { livenessBody, readinessReport, type ReadinessCheck } from '@envengine/process-kit';

/**
 * `/healthz` says the process is alive; `/readyz` says whether its dependencies answer
 * (503 while one is down), for orchestrators and for the stack's start-up wait.
 */
export function mountHealthRoutes(app: Express, service: string, checks: Record<string, ReadinessCheck>): void {
  app.get('/healthz', (_req, res) => {
    res.json({ data: livenessBody(service) });
  });
  app.get('/readyz', async (_req, res) => {
    const { ready, body } = await readinessReport(service, checks);
    res.status(ready ? 200 : 503).json({ data: body });
  });
}
