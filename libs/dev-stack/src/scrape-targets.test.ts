import { describe, expect, it } from 'vitest';
import { metricsBlock, scrapeTargets } from './scrape-targets.ts';
import { stackPorts, type StackPorts } from './service-processes.ts';

// What `npm start` prints under `Metrics:` (tools/stack/stack.ts). That every job of
// deploy/prometheus/prometheus.yml is among its lines is checked in tools/deploy/prometheus.test.ts.
describe('the metrics block of npm start', () => {
  it("lists the gateway's metrics listener, never its public port, then each deployable, one URL per replica", () => {
    const ports: StackPorts = {
      services: {
        gateway: [21000, 21001],
        'placement-service': [21010, 21011],
        'deployment-service': [21020, 21021],
        'secrets-service': [21030, 21031],
        'workflow-worker': [21040, 21041],
        'attempt-worker': [21050, 21051],
      },
      gatewayMetrics: [21100, 21101],
      poolGate: [21200, 21201],
    };
    expect(scrapeTargets(ports)).toEqual([
      { job: 'envengine-gateway', urls: ['http://127.0.0.1:21100/metrics', 'http://127.0.0.1:21101/metrics'] },
      { job: 'envengine-placement-service', urls: ['http://127.0.0.1:21010/metrics', 'http://127.0.0.1:21011/metrics'] },
      { job: 'envengine-deployment-service', urls: ['http://127.0.0.1:21020/metrics', 'http://127.0.0.1:21021/metrics'] },
      { job: 'envengine-secrets-service', urls: ['http://127.0.0.1:21030/metrics', 'http://127.0.0.1:21031/metrics'] },
      { job: 'envengine-workflow-worker', urls: ['http://127.0.0.1:21040/metrics', 'http://127.0.0.1:21041/metrics'] },
      { job: 'envengine-attempt-worker', urls: ['http://127.0.0.1:21050/metrics', 'http://127.0.0.1:21051/metrics'] },
    ]);
    expect(metricsBlock(ports).join('\n')).not.toContain(':21000');
  });

  it('prints a line per job, its arrows aligned, on the default ports', async () => {
    expect(metricsBlock(await stackPorts('default', 1))).toEqual([
      '    envengine-gateway            → http://127.0.0.1:9464/metrics',
      '    envengine-placement-service  → http://127.0.0.1:8081/metrics',
      '    envengine-deployment-service → http://127.0.0.1:8082/metrics',
      '    envengine-secrets-service    → http://127.0.0.1:8083/metrics',
      '    envengine-workflow-worker    → http://127.0.0.1:8084/metrics',
      '    envengine-attempt-worker     → http://127.0.0.1:8085/metrics',
    ]);
  });
});
