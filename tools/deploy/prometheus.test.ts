import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { findOnPath } from '@envengine/backing-servers';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import { activationMetrics, createMetricsRegistry, httpMetrics, ingestMetrics, placementMetrics, workerMetrics } from '@envengine/service-metrics';

// deploy/prometheus and deploy/grafana, checked by Prometheus's own promtool (installed by
// the test command's first step, tools/servers/install.ts) and against the metrics the
// engine's processes really export.
const DEPLOY = join(WORKSPACE_ROOT, 'deploy');
const promtool = findOnPath('promtool');

function promtoolSays(...args: string[]): { status: number | null; output: string } {
  if (!promtool) throw new Error('promtool is not on PATH: `npm test` installs it first (Debian package prometheus)');
  const ran = spawnSync(promtool, args, { cwd: join(DEPLOY, 'prometheus'), encoding: 'utf8' });
  return { status: ran.status, output: `${ran.stdout}${ran.stderr}` };
}

/** Every metric name the engine's processes export (what each service registers, defaults included). */
async function exportedMetricNames(): Promise<Set<string>> {
  const registry = createMetricsRegistry('deploy-check');
  httpMetrics(registry);
  placementMetrics(registry, { queued: async () => ({ local: 0, remote: 0 }), liveWorkers: async () => ({ local: 0, remote: 0 }) });
  ingestMetrics(registry);
  activationMetrics(registry);
  workerMetrics(registry);
  const names = new Set<string>(['up']);
  for (const metric of await registry.getMetricsAsJSON()) {
    names.add(metric.name);
    // prom-client's typings say an enum; the value is its name.
    if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

/** The engine's metric names an expression uses that no process exports. */
function unknownMetrics(expression: string, exported: ReadonlySet<string>): string[] {
  return [...expression.matchAll(/\benvengine_[a-z0-9_]+/g)].map(([name]) => name).filter((name) => !exported.has(name));
}

const rules = parse(readFileSync(join(DEPLOY, 'prometheus', 'alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
const dashboard = JSON.parse(readFileSync(join(DEPLOY, 'grafana', 'envengine-dashboard.json'), 'utf8')) as {
  panels: Array<{ id: number; title: string; targets: Array<{ expr: string; datasource: { type: string } }> }>;
};

describe('deploy/prometheus and deploy/grafana', () => {
  it('is a configuration and rules that promtool accepts', () => {
    const config = promtoolSays('check', 'config', 'prometheus.yml');
    expect(config.status, config.output).toBe(0);
    expect(config.output).toContain('SUCCESS: 1 rule files found');
    const checked = promtoolSays('check', 'rules', 'alerts.yml');
    expect(checked.status, checked.output).toBe(0);
  });

  it("raises each alert on the series that should, and none on a healthy stack's (promtool test rules)", () => {
    const tested = promtoolSays('test', 'rules', 'alerts.test.yml');
    expect(tested.status, tested.output).toBe(0);
    // Every alert has a case in the unit tests.
    const testText = readFileSync(join(DEPLOY, 'prometheus', 'alerts.test.yml'), 'utf8');
    for (const { alert } of rules.groups.flatMap((group) => group.rules)) expect(testText).toContain(`alertname: ${alert}`);
  });

  it('has the alerts operators expect: a process down, lost attempts, queue age, missed ticks, no live runner', () => {
    expect(rules.groups.flatMap((group) => group.rules).map((rule) => rule.alert).sort()).toEqual(
      ['EnvengineAttemptsLost', 'EnvengineAttemptsWaiting', 'EnvengineNoLiveRunner', 'EnvengineProcessDown', 'EnvengineScheduleTicksMissed'],
    );
  });

  it('names only metrics that the engine exports, in its rules and in its dashboard', async () => {
    const exported = await exportedMetricNames();
    // Positive control: a name no process exports is found.
    expect(unknownMetrics('rate(envengine_made_up_total[5m]) + envengine_runs_started_total', exported)).toEqual(['envengine_made_up_total']);
    const expressions = [...rules.groups.flatMap((group) => group.rules.map((rule) => rule.expr)), ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr))];
    expect(expressions.length).toBeGreaterThan(15);
    expect(expressions.flatMap((expression) => unknownMetrics(expression, exported))).toEqual([]);
  });

  it('is a dashboard of Prometheus panels with distinct ids, each with a query', () => {
    expect(new Set(dashboard.panels.map((panel) => panel.id)).size).toBe(dashboard.panels.length);
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets) expect(target.datasource.type).toBe('prometheus');
    }
  });
});
