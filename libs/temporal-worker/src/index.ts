/**
 * The Temporal SDK's worker side, for the processes that host one: its runtime, and a scope's
 * activities served on its own task queue. Apart from service-kit, so that the services that
 * host no worker never load the SDK's native core.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context, type Context as ActivityContext } from '@temporalio/activity';
import { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } from '@temporalio/interceptors-opentelemetry';
import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import type { Logger } from '@envengine/process-kit';
import { backoffDelay, type Backoff } from '@envengine/retry-policy';
import type { TemporalConnectionOptions } from '@envengine/service-kit';

/**
 * Installs the Temporal SDK's runtime for this process, once, before any worker or native
 * connection: the SDK's log lines join the service's JSON log, and the SDK installs no signal
 * handlers. Its own would shut the workers down first, and the service's stop, which then
 * closes their connections, found them draining and failed (exit 1 on every SIGTERM).
 */
export function installTemporalRuntime(log: Logger): void {
  Runtime.install({
    shutdownSignals: [],
    logger: new DefaultLogger('WARN', (entry) => {
      const level = entry.level === 'ERROR' ? 'error' : 'warn';
      log[level]({ sdk: entry.meta }, entry.message);
    }),
    telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
  });
}

export interface ActivityWorkerOptions {
  connection: TemporalConnectionOptions;
  namespace: string;
  /** The scope's own queue (`scopeTaskQueue` in libs/contracts/src/workflow-inputs.ts). */
  taskQueue: string;
  /** Factories over the scope's own repositories: the activities never call back into a service. Each heartbeats while it runs. */
  activities: object;
  /** Tracing on (libs/tracing): each activity is a span in its workflow's trace. */
  traced?: boolean;
  log: Logger;
}

/** Each activity a span, its parent the span of the workflow that scheduled it. */
export const tracedActivity = (ctx: ActivityContext) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) });

/**
 * How often a scope's activity tells Temporal it is alive while it runs: well under the
 * heartbeat timeout its workflows give it (`SCOPE_HEARTBEAT_TIMEOUT` in
 * libs/contracts/src/workflow-inputs.ts), so that a step whose service died is tried again
 * within seconds, not after the step's whole time limit.
 */
const HEARTBEAT_MS = 2_000;

/** Each activity of `activities`, heartbeating every HEARTBEAT_MS while it runs. */
function heartbeating(activities: object): Record<string, (...args: unknown[]) => Promise<unknown>> {
  return Object.fromEntries(
    Object.entries(activities as Record<string, (...args: unknown[]) => Promise<unknown>>).map(([name, activity]) => [
      name,
      async (...args: unknown[]) => {
        const context = Context.current();
        const beat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
        try {
          return await activity(...args);
        } finally {
          clearInterval(beat);
        }
      },
    ]),
  );
}

/** Waits between tries to reach Temporal, or after the worker stopped on an error. */
const RECONNECT: Backoff = { firstMs: 250, factor: 2, maxMs: 5_000, jitter: 0.1 };

/**
 * A scope's activities served on its own task queue, in the service that owns their data:
 * an activity-only worker (the workflows run in the workflow-worker and schedule these by
 * queue). It connects when Temporal answers and starts again after a fatal error, so the
 * service keeps serving HTTP while Temporal is away, as it did before it hosted a worker.
 */
export class ActivityWorker {
  private worker: Worker | undefined;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(private readonly options: ActivityWorkerOptions) {}

  /** Whether it polls its queue now (for readiness and tests). */
  get running(): boolean {
    return this.worker?.getState() === 'RUNNING';
  }

  start(): void {
    this.loop ??= this.serve();
  }

  /** Stops polling and waits for the activities in flight to finish. */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.worker && this.worker.getState() === 'RUNNING') this.worker.shutdown();
    await this.loop;
  }

  private async serve(): Promise<void> {
    const { log, taskQueue } = this.options;
    for (let tries = 1; !this.stopping.signal.aborted; tries += 1) {
      let connection: NativeConnection | undefined;
      try {
        connection = await NativeConnection.connect(this.options.connection);
        this.worker = await Worker.create({
          connection,
          namespace: this.options.namespace,
          taskQueue,
          activities: heartbeating(this.options.activities),
          ...(this.options.traced ? { interceptors: { activity: [tracedActivity] } } : {}),
        });
        if (this.stopping.signal.aborted) break;
        log.info({ taskQueue }, 'serving activities');
        tries = 0;
        await this.worker.run();
      } catch (error) {
        log.warn({ taskQueue, tries, err: (error as Error).message }, 'activity worker not running; trying again');
      } finally {
        this.worker = undefined;
        await connection?.close().catch(() => undefined);
      }
      if (this.stopping.signal.aborted) break;
      await sleep(backoffDelay(RECONNECT, Math.max(1, tries)), undefined, { signal: this.stopping.signal }).catch(() => undefined);
    }
  }
}
