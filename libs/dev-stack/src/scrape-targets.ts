import type { StackPorts } from './service-processes.ts';
import { SERVICE_NAMES, type ServiceName } from './services.ts';

/** One job of deploy/prometheus/prometheus.yml, where a stack on this machine serves it. */
export interface ScrapeTarget {
  /** The `job_name` in deploy/prometheus/prometheus.yml. */
  job: string;
  /** Each replica's `/metrics`, the first one first. */
  urls: string[];
}

/** The job that scrapes a deployable in deploy/prometheus/prometheus.yml. */
export const scrapeJobName = (name: ServiceName): string => `envengine-${name}`;

/**
 * Every process's `/metrics` on a stack of these ports, by the job of deploy/prometheus that
 * scrapes it: the gateway's own metrics listener (never its public port), then each other
 * deployable at its port, in the order of prometheus.yml. A tenant's pool workers are not
 * the stack's: they are scraped where they run.
 */
export function scrapeTargets(ports: StackPorts): ScrapeTarget[] {
  const urls = (list: number[]) => list.map((port) => `http://127.0.0.1:${port}/metrics`);
  return [
    { job: scrapeJobName('gateway'), urls: urls(ports.gatewayMetrics) },
    ...SERVICE_NAMES.filter((name) => name !== 'gateway').map((name) => ({ job: scrapeJobName(name), urls: urls(ports.services[name]) })),
  ];
}

/**
 * What `npm start` prints under `Metrics:`: a line per job, `job → URL[, URL of each
 * further replica]`; each URL's `host:port` is a target of that job (prometheus.yml says so).
 */
export function metricsBlock(ports: StackPorts, indent = '    '): string[] {
  const targets = scrapeTargets(ports);
  const width = Math.max(...targets.map((target) => target.job.length));
  return targets.map((target) => `${indent}${target.job.padEnd(width)} → ${target.urls.join(', ')}`);
}
