import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric of the engine, named and described once (docs/operations.md "Metrics"
 * lists them). No label takes a value a user controls: no id, tenant, environment, name
 * or path segment, only the closed sets given with each.
 */
export type MetricsRegistry = Registry;

/** A registry with the process's own metrics (CPU, memory, event loop), labeled with the service. */
export function createMetricsRegistry(service: string): MetricsRegistry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, prefix: 'envengine_' });
  return registry;
}

const TRIGGERS = ['manual', 'schedule'] as const;
const RUN_OUTCOMES = ['succeeded', 'failed', 'canceled'] as const;
const EXECUTORS = ['local', 'remote'] as const;
/** `ScheduleTickOutcome` of the contracts: a schedule's tick, by what came of it. */
const TICK_OUTCOMES = ['run_created', 'late', 'skipped_overlap', 'skipped_paused', 'skipped_quota', 'missed'] as const;
/** The periodic sweeps: the placement-service's lease reaper, dispatch reconciler and revoked credentials' store keys, the deployment-service's unused bundles. */
export const SWEEPS = ['reap', 'reconcile', 'bundles', 'store_keys', 'webhooks'] as const;
export type SweepName = (typeof SWEEPS)[number];

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** HTTP requests served, by route template (`routeTemplateOf`), method and status. */
export function httpMetrics(registry: MetricsRegistry) {
  return {
    requestDuration: new Histogram({
      name: 'envengine_http_request_duration_seconds',
      help: 'HTTP requests by route template, method and status code.',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
  };
}

/** A process's periodic sweeps (`PeriodicSweep`, which starts its own series at zero), each ending counted. */
export function sweepMetrics(registry: MetricsRegistry) {
  return {
    sweeps: new Counter({
      name: 'envengine_sweeps_total',
      help: 'Periodic sweeps of this process that ended, by sweep (reap: lost workers; reconcile: undelivered dispatches; bundles: bundles no deployment names; store_keys: keys to the engine\'s store of revoked pool credentials) and outcome (completed, failed). A sweep that stops counting has stalled.',
      labelNames: ['sweep', 'outcome'] as const,
      registers: [registry],
    }),
  };
}
export type SweepMetrics = ReturnType<typeof sweepMetrics>;

/** The placement scope: runs, attempts, queues, schedules' ticks and workers. */
export function placementMetrics(registry: MetricsRegistry, collect: { queued: () => Promise<Record<'local' | 'remote', number>>; liveWorkers: () => Promise<Record<'local' | 'remote', number>> }) {
  const metrics = {
    runsStarted: new Counter({
      name: 'envengine_runs_started_total',
      help: 'Runs created, by trigger (manual, schedule).',
      labelNames: ['trigger'] as const,
      registers: [registry],
    }),
    runsFinished: new Counter({
      name: 'envengine_runs_finished_total',
      help: 'Runs that reached a terminal status, by trigger and outcome (succeeded, failed, canceled).',
      labelNames: ['trigger', 'outcome'] as const,
      registers: [registry],
    }),
    attemptsLost: new Counter({
      name: 'envengine_attempts_lost_total',
      help: 'Attempts marked lost: their worker stopped heartbeating.',
      labelNames: ['executor'] as const,
      registers: [registry],
    }),
    attemptsRetried: new Counter({
      name: 'envengine_attempts_retried_total',
      help: 'Retry attempts dispatched after a failed or lost attempt.',
      labelNames: ['executor'] as const,
      registers: [registry],
    }),
    dispatchToRunning: new Histogram({
      name: 'envengine_attempt_dispatch_to_running_seconds',
      help: 'From an attempt\'s dispatch to its start by a worker, by executor.',
      labelNames: ['executor'] as const,
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
    ...sweepMetrics(registry),
    webhookAttempts: new Counter({
      name: 'envengine_webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome: delivered (a 2xx), failed (retried later), gave_up (the last try failed: the webhook was disabled), refused (a target on the engine\'s own network; retried too).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    scheduleTicks: new Counter({
      name: 'envengine_schedule_ticks_total',
      help: 'Schedule ticks, by outcome: run_created, late (its run made over a minute after the fire time), skipped_overlap, skipped_paused, skipped_quota (the queued-runs quota was full), missed (a fire time passed while the engine was down or behind; only the latest fires).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    attemptsQueued: new Gauge({
      name: 'envengine_attempts_queued',
      help: 'Attempts queued and not yet started, by queue: local (the engine\'s runner) or remote (the tenants\' pool queues, in aggregate).',
      labelNames: ['queue'] as const,
      registers: [registry],
      async collect() {
        const counts = await collect.queued();
        for (const queue of ['local', 'remote'] as const) this.set({ queue }, counts[queue]);
      },
    }),
    liveWorkers: new Gauge({
      name: 'envengine_workers_live',
      help: 'Workers that heartbeated within the lease TTL, by executor.',
      labelNames: ['executor'] as const,
      registers: [registry],
      async collect() {
        const counts = await collect.liveWorkers();
        for (const executor of ['local', 'remote'] as const) this.set({ executor }, counts[executor]);
      },
    }),
  };
  // Every series exists from the start, at zero: an alert on a rate sees 0, not "no data".
  for (const trigger of TRIGGERS) {
    metrics.runsStarted.inc({ trigger }, 0);
    for (const outcome of RUN_OUTCOMES) metrics.runsFinished.inc({ trigger, outcome }, 0);
  }
  for (const executor of EXECUTORS) {
    metrics.attemptsLost.inc({ executor }, 0);
    metrics.attemptsRetried.inc({ executor }, 0);
    metrics.dispatchToRunning.zero({ executor });
  }
  for (const outcome of TICK_OUTCOMES) metrics.scheduleTicks.inc({ outcome }, 0);
  return metrics;
}
export type PlacementMetrics = ReturnType<typeof placementMetrics>;

/** The deployment-service: how long ingests take, seen from the request. */
export function ingestMetrics(registry: MetricsRegistry) {
  const metrics = {
    ingestDuration: new Histogram({
      name: 'envengine_ingest_duration_seconds',
      help: 'Ingests from the request to the outcome, by outcome (ready, failed, pending: still running at the answer).',
      labelNames: ['outcome'] as const,
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
  };
  for (const outcome of ['ready', 'failed', 'pending']) metrics.ingestDuration.zero({ outcome });
  return metrics;
}
export type IngestMetrics = ReturnType<typeof ingestMetrics>;

/** The workflow-worker: how long each try of an activation's step takes, where it runs. */
export function activationMetrics(registry: MetricsRegistry) {
  const metrics = {
    activationDuration: new Histogram({
      name: 'envengine_activation_duration_seconds',
      help: 'Tries of the activation step (re-check, schedules, pointer), by outcome (activated, failed; a failed try may be retried).',
      labelNames: ['outcome'] as const,
      buckets: SECONDS_BUCKETS,
      registers: [registry],
    }),
  };
  for (const outcome of ['activated', 'failed']) metrics.activationDuration.zero({ outcome });
  return metrics;
}
export type ActivationMetrics = ReturnType<typeof activationMetrics>;

/** A worker (the engine's runner or a pool's): attempts it ran and how they ended. */
export function workerMetrics(registry: MetricsRegistry) {
  const metrics = {
    attemptsRun: new Counter({
      name: 'envengine_worker_attempts_total',
      help: 'Attempts this worker took from its queue, by result: succeeded, failed, refused (not startable), superseded (its lease was lost), released (handed back while draining).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
  };
  for (const result of ['succeeded', 'failed', 'refused', 'superseded', 'released']) metrics.attemptsRun.inc({ result }, 0);
  return metrics;
}
export type WorkerMetrics = ReturnType<typeof workerMetrics>;

/** The exposition: what `/metrics` answers. */
export async function exposition(registry: MetricsRegistry): Promise<{ contentType: string; text: string }> {
  return { contentType: registry.contentType, text: await registry.metrics() };
}
