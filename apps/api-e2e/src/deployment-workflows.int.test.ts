import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { scopeTaskQueue, type Recheck, type ScopeWithActivities } from '@envengine/contracts';
import {
  activationRequested,
  ENVIRONMENT_ACTIVATIONS_WORKFLOW,
  EXPIRY_NOTICE_MS,
  environmentActivationsWorkflowId,
  type ActivateInput,
  type DeploymentActivities,
  type EnvironmentLifecycleActivities,
  type IngestInput,
  type IngestOutcome,
  type ScheduleTickActivities,
  schedulesChanged,
  unansweredActivations,
} from '@envengine/deployment-workflows';
import { workflowBundleOptions } from '@envengine/dev-stack';
import { newId } from '@envengine/resource-ids';
import { createTenant, until } from '@envengine/test-harness';

const stack = inject('stack');

/**
 * The workflows' logic with stand-in activities, on the suite's real Temporal dev server.
 * (`@temporalio/testing`'s time-skipping server is downloaded at run time, which these
 * machines cannot do; nothing here needs skipped time.) Each test runs its own worker on
 * a task queue of its own, so the activities it records are its own.
 */
describe('deployment workflows', () => {
  let bundle: WorkflowBundleWithSourceMap;
  let connection: Connection;
  let client: Client;
  /** The task queue of the worker a test runs, where its environment workflows must run too. */
  let currentTaskQueue = '';

  beforeAll(async () => {
    Runtime.install({ logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined } });
    // The workflow-worker's own bundle options: its preloaded (shared, frozen) modules too.
    bundle = await bundleWorkflowCode({
      ...workflowBundleOptions(),
      logger: { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    connection = await Connection.connect({ address: stack.temporalAddress });
    client = new Client({ connection });
  });

  afterAll(async () => {
    await connection?.close();
  });

  type AnyActivities = Partial<DeploymentActivities & EnvironmentLifecycleActivities & ScheduleTickActivities>;

  /**
   * Runs `body` with a worker of the workflows whose activities are `activities` (any not
   * given throws), and each scope's activity worker on its own queue, as its service serves
   * them, with `onScopeQueues` (one set for every scope, or a set per scope; by default
   * `activities`).
   */
  async function withWorker<T>(
    activities: AnyActivities,
    body: (taskQueue: string) => Promise<T>,
    onScopeQueues: AnyActivities | ((scope: ScopeWithActivities) => AnyActivities) = activities,
  ): Promise<T> {
    const taskQueue = `wf-test-${randomBytes(4).toString('hex')}`;
    const workerConnection = await NativeConnection.connect({ address: stack.temporalAddress });
    const worker = await Worker.create({ connection: workerConnection, taskQueue, workflowBundle: bundle, activities });
    const scopeWorkers = await Promise.all(
      (['placement', 'secrets'] as const).map((scope) =>
        Worker.create({ connection: workerConnection, taskQueue: scopeTaskQueue(taskQueue, scope), activities: typeof onScopeQueues === 'function' ? onScopeQueues(scope) : onScopeQueues }),
      ),
    );
    const scopesRunning = scopeWorkers.map((scopeWorker) => scopeWorker.run());
    try {
      return await worker.runUntil(body(taskQueue));
    } finally {
      for (const scopeWorker of scopeWorkers) scopeWorker.shutdown();
      await Promise.all(scopesRunning);
      await workerConnection.close();
    }
  }

  /** Runs `body` with `activities` served on the scopes' queues only: a step scheduled on the workflows' queue finds no worker. */
  const withPlacementWorker = <T,>(activities: AnyActivities, body: (taskQueue: string) => Promise<T>): Promise<T> => withWorker({}, body, activities);

  /**
   * What `requestActivation` does in production (signal-with-start of the environment's
   * workflow), with a short retry so that the retry cap is reached in seconds.
   */
  const requestActivationOn = (taskQueue: string, times = 1): DeploymentActivities['requestActivation'] => async (input) => {
    for (let i = 0; i < times; i += 1) {
      await client.workflow.signalWithStart(ENVIRONMENT_ACTIVATIONS_WORKFLOW, {
        workflowId: environmentActivationsWorkflowId(input.environmentId),
        taskQueue,
        args: [{ tenantId: input.tenantId, environmentId: input.environmentId, environmentName: input.environmentName, pending: [], served: [], retry: { maximumAttempts: 4, maximumInterval: '200 milliseconds' } }],
        signal: activationRequested,
        signalArgs: [{ deploymentId: input.deploymentId, replyTo: input.replyTo }],
      });
    }
  };

  const ingestInput = (overrides: Partial<IngestInput> = {}): IngestInput => ({
    deploymentId: `dep_${randomBytes(13).toString('hex')}`,
    tenantId: 'ten_wf',
    environmentId: `env_${randomBytes(6).toString('hex')}`,
    environmentName: 'prod',
    strict: false,
    activeDeploymentId: null,
    bundleRef: 'sha256:x',
    git: { branch: 'local', sha: 'local' },
    sdkVersion: null,
    activate: true,
    allowContractChanges: [],
    createdBy: null,
    fieldErrors: [],
    ...overrides,
  });

  const terminateEnvironment = async (environmentId: string) => {
    await client.workflow.getHandle(environmentActivationsWorkflowId(environmentId)).terminate('test done').catch(() => undefined);
  };

  it('a failed validation never asks for an activation; a ready one asks exactly when told to', async () => {
    for (const [status, activate, expectActivation] of [
      ['failed', true, false],
      ['ready', false, false],
      ['ready', true, true],
    ] as const) {
      const requested: string[] = [];
      const recheck: Recheck = { checked: 1, quarantined: [] };
      const input = ingestInput({ activate });
      const outcome = await withWorker(
        {
          validateAndRecord: async () => ({ status, errors: status === 'failed' ? 1 : 0, warnings: 0 }),
          requestActivation: async (request) => {
            requested.push(request.deploymentId);
            return requestActivationOn(currentTaskQueue)(request);
          },
          activate: async () => recheck,
        },
        (taskQueue) => {
          currentTaskQueue = taskQueue;
          return client.workflow.execute('ingestDeployment', { taskQueue, workflowId: `ingest-${input.deploymentId}`, args: [input] }) as Promise<IngestOutcome>;
        },
      );
      expect(outcome, `${status}, activate ${activate}`).toEqual({ deploymentId: input.deploymentId, status, recheck: expectActivation ? recheck : null });
      expect(requested).toEqual(expectActivation ? [input.deploymentId] : []);
      await terminateEnvironment(input.environmentId);
    }
  });

  it('runs one environment’s activations one at a time, each answered with its own re-check, a repeated request served once', async () => {
    const environmentId = `env_${randomBytes(6).toString('hex')}`;
    const windows: Array<{ deploymentId: string; start: number; end: number }> = [];
    let running = 0;
    let mostAtOnce = 0;
    const ids = Array.from({ length: 6 }, (_, i) => `dep_serial${i}`);
    const activated: string[] = [];
    // The first activation holds until every request has been delivered, so the others
    // arrive while one runs (by evidence, not by a guess of how long that takes).
    const delivered = new Set<string>();
    let allDelivered!: () => void;
    const everyRequestIn = new Promise<void>((resolve) => (allDelivered = resolve));
    const results = await withWorker(
      {
        // Each request delivered twice, as a retried local activity would.
        requestActivation: async (request) => {
          await requestActivationOn(currentTaskQueue, 2)(request);
          delivered.add(request.deploymentId);
          if (delivered.size === ids.length) allDelivered();
        },
        activate: async ({ deploymentId }: ActivateInput) => {
          activated.push(deploymentId);
          running += 1;
          mostAtOnce = Math.max(mostAtOnce, running);
          const start = Date.now();
          await everyRequestIn;
          windows.push({ deploymentId, start, end: Date.now() });
          running -= 1;
          return { checked: ids.indexOf(deploymentId), quarantined: [] };
        },
      },
      async (taskQueue) => {
        currentTaskQueue = taskQueue;
        return Promise.all(
          ids.map((deploymentId) =>
            client.workflow.execute('activateDeployment', {
              taskQueue,
              workflowId: `activate-${deploymentId}-${environmentId}`,
              args: [{ deploymentId, tenantId: 'ten_wf', environmentId, environmentName: 'prod' } satisfies ActivateInput],
            }) as Promise<Recheck>,
          ),
        );
      },
    );
    expect(mostAtOnce).toBe(1);
    expect(results.map((recheck) => recheck.checked)).toEqual([0, 1, 2, 3, 4, 5]);
    expect([...activated].sort()).toEqual([...ids].sort());
    const sorted = [...windows].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i += 1) expect(sorted[i]!.start).toBeGreaterThanOrEqual(sorted[i - 1]!.end);
    // The workflow's own record: it never scheduled an activation while another was open.
    const history = await client.workflow.getHandle(environmentActivationsWorkflowId(environmentId)).fetchHistory();
    const activityTypes = new Map<string, string>();
    let open = 0;
    let scheduled = 0;
    for (const event of history.events ?? []) {
      const started = event.activityTaskScheduledEventAttributes;
      if (started?.activityType?.name === 'activate') {
        activityTypes.set(String(event.eventId), 'activate');
        open += 1;
        scheduled += 1;
        expect(open, `event ${event.eventId}`).toBe(1);
      }
      const ended = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes ?? event.activityTaskCanceledEventAttributes;
      if (ended && activityTypes.get(String(ended.scheduledEventId)) === 'activate') open -= 1;
    }
    expect(scheduled).toBe(ids.length);
    await terminateEnvironment(environmentId);
  });

  it('a permanent failure is not retried; a failing activation ends after its retry cap, and the next one still runs', async () => {
    const environmentId = `env_${randomBytes(6).toString('hex')}`;
    const attempts = new Map<string, number>();
    const outcomes = await withWorker(
      {
        requestActivation: async (request) => requestActivationOn(currentTaskQueue)(request),
        activate: async ({ deploymentId }: ActivateInput) => {
          attempts.set(deploymentId, (attempts.get(deploymentId) ?? 0) + 1);
          if (deploymentId === 'dep_not_ready') throw ApplicationFailure.nonRetryable('deployment dep_not_ready is failed', 'NotReady');
          if (deploymentId === 'dep_flaky') throw new Error('placement-service is restarting');
          return { checked: 0, quarantined: [] };
        },
      },
      async (taskQueue) => {
        currentTaskQueue = taskQueue;
        const run = (deploymentId: string) =>
          client.workflow
            .execute('activateDeployment', {
              taskQueue,
              workflowId: `activate-${deploymentId}-${environmentId}`,
              args: [{ deploymentId, tenantId: 'ten_wf', environmentId, environmentName: 'prod' } satisfies ActivateInput],
            })
            .then(
              () => 'activated',
              (error: unknown) => (error instanceof WorkflowFailedError ? `failed: ${error.cause?.message}` : `error: ${String(error)}`),
            );
        return [await run('dep_not_ready'), await run('dep_flaky'), await run('dep_fine')];
      },
    );
    expect(outcomes[0]).toMatch(/^failed: activation of dep_not_ready failed/);
    expect(attempts.get('dep_not_ready')).toBe(1);
    expect(outcomes[1]).toMatch(/^failed: activation of dep_flaky failed/);
    expect(attempts.get('dep_flaky')).toBe(4);
    expect(outcomes[2]).toBe('activated');
    await terminateEnvironment(environmentId);
  });

  it("a tear-down runs its steps in order, rides out a failing step, purges only when asked, and runs each scope's steps on its scope's queue", async () => {
    const scope = { tenantId: 'ten_wf', environmentId: `env_${randomBytes(6).toString('hex')}`, environmentName: 'pr-1' };
    const steps: string[] = [];
    let secretsFailures = 2;
    /** Every step on either queue, each recorded with the queue that served it. */
    const activitiesOn = (queue: string): Partial<EnvironmentLifecycleActivities> => {
      const record = (name: string) => async () => {
        steps.push(`${name} @${queue}`);
        return {};
      };
      return {
        stopEnvironmentWorkflows: async () => void steps.push(`stop workflows @${queue}`),
        deleteEnvironmentSchedules: async () => (steps.push(`schedules @${queue}`), { deleted: 1 }),
        removeEnvironmentRuns: record('runs'),
        // Two pages: the workflow asks again from where the first one ended.
        purgeMaterializationFiles: async ({ after }) => (steps.push(`files after ${after} @${queue}`), after === null ? { removed: 500, next: 'mat_page1' } : { removed: 2, next: null }),
        retireEnvironmentSecrets: async () => {
          steps.push(`secrets @${queue}`);
          if (secretsFailures-- > 0) throw new Error('secrets-service is restarting');
          return {};
        },
        removeDeploymentRecords: record('deployments'),
        removeEnvironment: async () => void steps.push(`environment @${queue}`),
      };
    };
    const results = await withWorker(
      activitiesOn('workflows'),
      async (taskQueue) => [
        await client.workflow.execute('environmentTeardown', { taskQueue, workflowId: `teardown-${scope.environmentId}`, args: [{ ...scope, purgeData: true }] }),
        await client.workflow.execute('environmentTeardown', { taskQueue, workflowId: `teardown-${scope.environmentId}-again`, args: [{ ...scope, purgeData: false }] }),
      ],
      (scope) => activitiesOn(scope),
    );
    expect(results).toEqual([{ name: 'pr-1' }, { name: 'pr-1' }]);
    const order = [
      'stop workflows @workflows',
      'schedules @placement',
      'runs @placement',
      'files after null @placement',
      'files after mat_page1 @placement',
      'secrets @secrets',
      'secrets @secrets',
      'secrets @secrets',
      'deployments @workflows',
      'environment @placement',
    ];
    expect(steps.slice(0, order.length)).toEqual(order);
    expect(steps.slice(order.length)).toEqual(['stop workflows @workflows', 'schedules @placement', 'runs @placement', 'secrets @secrets', 'deployments @workflows', 'environment @placement']);
  });

  it("a tear-down answers every activation its environment's workflow held (queued or under way): each ingest fails at once, saying the environment was deleted", async () => {
    const tenant = await createTenant(stack, 'wf-teardown-answers');
    const environmentId = newId('env');
    const ids = Array.from({ length: 3 }, (_, i) => `dep_held${i}_${randomBytes(3).toString('hex')}`);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let activating = 0;
    const failures = await withWorker(
      {
        requestActivation: async (request) => requestActivationOn(currentTaskQueue)(request),
        // The first activation never ends on its own: the others stay queued behind it.
        activate: async () => {
          activating += 1;
          await released;
          return { checked: 0, quarantined: [] };
        },
      },
      async (taskQueue) => {
        currentTaskQueue = taskQueue;
        const requested = ids.map((deploymentId) =>
          client.workflow
            .execute('activateDeployment', { taskQueue, workflowId: `activate-${deploymentId}`, args: [{ deploymentId, tenantId: tenant.tenantId, environmentId, environmentName: 'held' } satisfies ActivateInput] })
            .then(() => 'activated', (error: unknown) => (error instanceof WorkflowFailedError ? (error.cause?.message ?? '') : String(error))),
        );
        // Evidence that one is under way and the other two are queued behind it.
        expect(await until(async () => activating, (count) => count === 1, 20_000)).toBe(1);
        const handle = client.workflow.getHandle(environmentActivationsWorkflowId(environmentId));
        expect(await until(() => handle.query(unansweredActivations), (held) => held.length === 3, 20_000)).toHaveLength(3);
        // The stack's own tear-down (its real activities), of an environment it never stored.
        await client.workflow.execute('environmentTeardown', {
          taskQueue: stack.deploymentsTaskQueue,
          workflowId: `teardown-${environmentId}`,
          args: [{ tenantId: tenant.tenantId, environmentId, environmentName: 'held', purgeData: false }],
        });
        const answers = await Promise.all(requested);
        release();
        return answers;
      },
    );
    expect(failures).toEqual(ids.map((deploymentId) => `activation of ${deploymentId} failed: environment "held" was deleted`));
  });

  it('an expiry timer fires at the stored expiry: a moved expiry is slept until, a later one answered is slept until, null ends it', async () => {
    const scope = { tenantId: 'ten_wf', environmentId: `env_${randomBytes(6).toString('hex')}`, environmentName: 'pr-2' };
    const calls: Array<{ at: number; asked: string }> = [];
    const notices: Array<{ at: number; asked: string }> = [];
    const storedExpiry = new Date(Date.now() + 1500).toISOString();
    const expired = await withPlacementWorker(
      {
        noticeEnvironmentExpiry: async ({ expiresAt }) => {
          notices.push({ at: Date.now(), asked: expiresAt });
          return { noticed: true };
        },
        // The placement-service's answer: the first time, that the stored expiry is later (a deploy whose signal was lost); then expired.
        expireEnvironment: async ({ expiresAt }) => {
          calls.push({ at: Date.now(), asked: expiresAt });
          return calls.length === 1 ? { expired: false, expires_at: storedExpiry } : { expired: true, expires_at: storedExpiry };
        },
      },
      async (taskQueue) => {
        const first = new Date(Date.now() + 500).toISOString();
        const handle = await client.workflow.start('environmentExpiry', { taskQueue, workflowId: `expiry-${scope.environmentId}`, args: [{ ...scope, expiresAt: first }] });
        // A deploy moved it (the signal), and the store says later still (a signal lost on the way).
        const moved = new Date(Date.now() + 1000).toISOString();
        await handle.signal('expiryMoved', moved);
        await handle.result();
        const cleared = await client.workflow.start('environmentExpiry', { taskQueue, workflowId: `expiry-${scope.environmentId}-cleared`, args: [{ ...scope, expiresAt: new Date(Date.now() + 60_000).toISOString() }] });
        await cleared.signal('expiryMoved', null);
        await cleared.result();
        return moved;
      },
    );
    // Not before the moved instant; asked again at the stored one; and the cleared timer asked nothing.
    expect(calls.length).toBe(2);
    expect(calls[0]!.asked).toBe(expired);
    expect(calls[0]!.at).toBeGreaterThanOrEqual(Date.parse(expired));
    expect(calls[1]!.asked).toBe(storedExpiry);
    expect(calls[1]!.at).toBeGreaterThanOrEqual(Date.parse(storedExpiry));
    // Less than the notice's hour left: each instant slept until was noticed at once, once, before its expiry.
    const noticed = notices.map((notice) => notice.asked);
    expect(new Set(noticed).size).toBe(noticed.length);
    expect(notices.find((notice) => notice.asked === expired)!.at).toBeLessThanOrEqual(calls[0]!.at);
    expect(notices.find((notice) => notice.asked === storedExpiry)!.at).toBeLessThanOrEqual(calls[1]!.at);
  });

  it('an expiry timer gives its notice an hour before the expiry, not sooner', async () => {
    const scope = { tenantId: 'ten_wf', environmentId: `env_${randomBytes(6).toString('hex')}`, environmentName: 'pr-3' };
    const notices: Array<{ at: number; asked: string }> = [];
    let expireCalls = 0;
    const expiresAt = new Date(Date.now() + EXPIRY_NOTICE_MS + 1500).toISOString();
    await withPlacementWorker(
      {
        noticeEnvironmentExpiry: async ({ expiresAt: asked }) => {
          notices.push({ at: Date.now(), asked });
          return { noticed: true };
        },
        expireEnvironment: async () => {
          expireCalls += 1;
          return { expired: true, expires_at: null };
        },
      },
      async (taskQueue) => {
        const handle = await client.workflow.start('environmentExpiry', { taskQueue, workflowId: `expiry-${scope.environmentId}`, args: [{ ...scope, expiresAt }] });
        await until(async () => notices.length, (count) => count >= 1, 30_000, 20);
        await handle.signal('expiryMoved', null);
        await handle.result();
      },
    );
    expect(notices).toHaveLength(1);
    expect(notices[0]!.asked).toBe(expiresAt);
    expect(notices[0]!.at).toBeGreaterThanOrEqual(Date.parse(expiresAt) - EXPIRY_NOTICE_MS);
    expect(expireCalls).toBe(0);
  });

  it("a tick loop's pass runs on the placement scope's own queue, where the owner of the schedules serves it", async () => {
    const served: string[] = [];
    const outcomes = { run_created: 0, late: 0, skipped_overlap: 0, skipped_paused: 0, skipped_quota: 0, missed: 0 };
    const pass = (queue: string): ScheduleTickActivities['tickSchedules'] => async ({ shard }) => {
      served.push(queue);
      return { shard, ticked: 0, batches: 0, outcomes, next_due_at: null };
    };
    await withWorker(
      { tickSchedules: pass('workflows') },
      async (taskQueue) => {
        const handle = await client.workflow.start('scheduleTicks', { taskQueue, workflowId: `ticks-queue-${randomBytes(4).toString('hex')}`, args: [{ shard: 0, passes: 0 }] });
        try {
          await until(async () => served.length, (count) => count >= 1, 30_000, 20);
          await handle.signal(schedulesChanged);
          await until(async () => served.length, (count) => count >= 2, 30_000, 20);
          expect(served.slice(0, 2)).toEqual(['placement', 'placement']);
        } finally {
          await handle.terminate().catch(() => undefined);
        }
      },
      { tickSchedules: pass('placement') },
    );
  });

  it('a tick loop outlives a pass that failed every retry: it ticks again, woken by a change or after its pause', async () => {
    const passes: number[] = [];
    const outcomes = { run_created: 1, late: 0, skipped_overlap: 0, skipped_paused: 0, skipped_quota: 0, missed: 0 };
    await withWorker(
      {
        tickSchedules: async ({ shard }) => {
          passes.push(shard);
          // The first pass fails for good (as after its last retry); the next ones tick.
          if (passes.length === 1) throw ApplicationFailure.nonRetryable('the placement-service is down');
          return { shard, ticked: 1, batches: 1, outcomes, next_due_at: new Date(Date.now() + 60_000).toISOString() };
        },
      },
      async (taskQueue) => {
        const handle = await client.workflow.start('scheduleTicks', { taskQueue, workflowId: `ticks-test-${randomBytes(4).toString('hex')}`, args: [{ shard: 3, passes: 0 }] });
        try {
          await until(async () => passes.length, (count) => count >= 1, 30_000, 20);
          // A schedule changed while the loop waits after the failure: it wakes and ticks.
          await handle.signal(schedulesChanged);
          const count = await until(async () => passes.length, (count) => count >= 2, 30_000, 20);
          expect(count).toBe(2);
          expect(passes).toEqual([3, 3]);
          expect((await handle.describe()).status.name).toBe('RUNNING');
        } finally {
          await handle.terminate().catch(() => undefined);
        }
      },
    );
  });
});
