import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { findOnPath } from '@envengine/backing-servers';
import { metricsBlock, stackPorts, WORKSPACE_ROOT } from '@envengine/dev-stack';
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
const scrapeConfig = parse(readFileSync(join(DEPLOY, 'prometheus', 'prometheus.yml'), 'utf8')) as {
  scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
};
const scrapeConfigComment = readFileSync(join(DEPLOY, 'prometheus', 'prometheus.yml'), 'utf8').split('\n').filter((line) => line.startsWith('#')).join('\n');

/** Jobs of prometheus.yml that `npm start` runs no process for, and why. */
const NOT_RUN_BY_NPM_START: Record<string, string> = {
  'envengine-pool-worker': "a tenant's pool worker runs on the tenant's hosts (envctl worker start), not in npm start",
};

/** The lines `npm start` prints under `Metrics:`, read as prometheus.yml says to: each job's targets, the host:port of each URL. */
function printedTargets(lines: string[]): Map<string, string[]> {
  const printed = new Map<string, string[]>();
  for (const line of lines) {
    const match = /^ +(\S+) +→ (\S.*)$/.exec(line);
    if (!match) throw new Error(`not a "job → URL, URL…" line: ${JSON.stringify(line)}`);
    const urls = match[2]!.split(', ').map((url) => new URL(url));
    for (const url of urls) expect(url.pathname, line).toBe('/metrics');
    expect(printed.has(match[1]!), `${match[1]} printed twice`).toBe(false);
    printed.set(match[1]!, urls.map((url) => url.host));
  }
  return printed;
}

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

  it('names only jobs whose targets `npm start` prints, one per replica, at the ports its comment says', async () => {
    const jobs = scrapeConfig.scrape_configs.map((job) => job.job_name);
    for (const job of Object.keys(NOT_RUN_BY_NPM_START)) expect(jobs, 'a job npm start need not print is gone from prometheus.yml').toContain(job);
    const runByNpmStart = scrapeConfig.scrape_configs.filter((job) => !(job.job_name in NOT_RUN_BY_NPM_START));
    expect(runByNpmStart.length).toBeGreaterThanOrEqual(6);
    const one = printedTargets(metricsBlock(await stackPorts('default', 1)));
    const two = printedTargets(metricsBlock(await stackPorts('default', 2)));
    // Every job it runs a process for, and only the job names of prometheus.yml.
    expect([...one.keys()].sort()).toEqual(runByNpmStart.map((job) => job.job_name).sort());
    expect([...two.keys()].sort()).toEqual([...one.keys()].sort());
    for (const job of runByNpmStart) {
      const ports = job.static_configs.flatMap((config) => config.targets).map((target) => Number(target.split(':').at(-1)));
      expect(ports, job.job_name).toHaveLength(1);
      // On the default ports: 127.0.0.1 at the compose target's port, each further replica 100 above it.
      expect(one.get(job.job_name), job.job_name).toEqual([`127.0.0.1:${ports[0]}`]);
      expect(two.get(job.job_name), job.job_name).toEqual([`127.0.0.1:${ports[0]}`, `127.0.0.1:${ports[0]! + 100}`]);
    }
    // The comment's example is a line npm start prints (two replicas), and the targets it makes of it.
    const example = metricsBlock(await stackPorts('default', 2)).find((line) => line.includes('envengine-placement-service'))!.trim();
    expect(scrapeConfigComment).toContain(`#   ${example}\n`);
    expect(scrapeConfigComment).toContain(`targets: [${two.get('envengine-placement-service')!.map((target) => `"${target}"`).join(', ')}]`);
    // The README's sample output of npm start shows the same lines.
    const readme = readFileSync(join(WORKSPACE_ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`\n${metricsBlock(await stackPorts('default', 1)).join('\n')}\n\`\`\``);
    // Positive control: a line that is not "job → URL" is refused.
    expect(() => printedTargets(['    envengine-gateway http://127.0.0.1:9464/metrics'])).toThrow(/not a "job → URL/);
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
