import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { superviseStack, type ServiceName, type Supervisor } from '@envengine/dev-stack';
import { createTenant, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, RUN_TEST_SETTINGS, waitForRun } from './runs-fixtures.ts';
import { restartHolds } from './supervision-fixtures.ts';

const shared = inject('stack');

describe('a killed process under `npm start` supervision (a stack of its own)', () => {
  let stack: TestStack;
  let supervisor: Supervisor;
  let tenant: TestTenant;
  let bundleRef: string;
  const reported: string[] = [];
  const holds = restartHolds();
  const holdRestart = holds.hold;
  const releaseRestart = holds.release;

  beforeAll(async () => {
    // Its own Redis: the local attempt queue has one name, so the shared stack's runner would take this stack's attempts.
    stack = await startTestStack({ mongoUrl: shared.mongoUrl, temporalAddress: shared.temporalAddress, env: RUN_TEST_SETTINGS });
    // Supervised as tools/stack/stack.ts supervises the stack it starts; the report lines are the evidence read here.
    supervisor = superviseStack(stack, {
      report: (line) => reported.push(line),
      beforeRestart: holds.beforeRestart,
    });
    tenant = await createTenant(stack.info, 'supervision');
    bundleRef = await deployRunsProject(tenant, join(stack.info.dataDir, 'lake'), 'local');
  });

  afterAll(async () => {
    await supervisor?.stop();
    await stack?.stop();
  });

  /** The last lines of a service's log in this stack, for a failure's message. */
  function logTail(name: ServiceName, lines = 40): string {
    const file = join(stack.info.dataDir, 'logs', `${name}.log`);
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    return `--- ${name} ---\n${text.split('\n').slice(-lines).join('\n')}`;
  }

  /** The supervisor's first report line matching `pattern`, waited for. */
  async function reportedLine(pattern: RegExp): Promise<string> {
    const line = await until(async () => reported.find((entry) => pattern.test(entry)), (found) => found !== undefined, 30_000, 20);
    if (line === undefined) throw new Error(`the supervisor never reported ${pattern}; it reported:\n${reported.join('\n')}`);
    return line;
  }

  /** SIGKILLs the service and waits until the supervisor reports the crash; answers the old pid. */
  async function kill(name: ServiceName): Promise<number> {
    const pid = stack.services.processes[name].pid!;
    process.kill(pid, 'SIGKILL');
    await reportedLine(new RegExp(`^${name} \\(pid ${pid}\\) exited unexpectedly with signal SIGKILL; restarting it in`));
    return pid;
  }

  /** Waits until the supervisor reports the service back, and checks that it is a new process. */
  async function cameBack(name: ServiceName, oldPid: number): Promise<void> {
    const line = await reportedLine(new RegExp(`^${name} is back \\(pid \\d+\\)`));
    expect(line).toContain(`(pid ${stack.services.processes[name].pid})`);
    expect(stack.services.processes[name].pid).not.toBe(oldPid);
  }

  const pidsBesides = (name: ServiceName) =>
    Object.fromEntries(Object.entries(stack.services.processes).flatMap(([other, process_]) => (other === name ? [] : [[other, process_.pid]])));
  const crashes = () => reported.filter((line) => line.includes('exited unexpectedly'));

  it('restarts the local runner; the API keeps serving meanwhile, and the run taken while it was down succeeds on the new runner', async () => {
    const others = pidsBesides('attempt-worker');
    holdRestart('attempt-worker');
    const oldPid = await kill('attempt-worker');
    // The restart is held: the API answers and takes a run while the runner is down.
    const [listed, created] = await Promise.all([tenant.api.get('/environments'), tenant.api.post('/environments/prod/runs', { job: 'all' })]);
    expect([listed.status, created.status]).toEqual([200, 201]);
    expect(stack.services.processes['attempt-worker'].running).toBe(false);
    releaseRestart('attempt-worker');

    await cameBack('attempt-worker', oldPid);
    const finished = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(finished.status).toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.executor, attempt.status])).toEqual([['local', 'succeeded']]);
    // Only the runner was restarted.
    expect(pidsBesides('attempt-worker')).toEqual(others);
    expect(crashes()).toHaveLength(1);
    expect(supervisor.restarts('attempt-worker')).toBe(1);
  });

  it('restarts the placement-service; the deployment scope keeps serving meanwhile, and runs succeed again', async () => {
    const others = pidsBesides('placement-service');
    holdRestart('placement-service');
    const oldPid = await kill('placement-service');
    // A bundle is the deployment-service's alone: the gateway still forwards to it.
    expect((await tenant.api.request('HEAD', `/bundles/${bundleRef}`)).status).toBe(200);
    expect(stack.services.processes['placement-service'].running).toBe(false);
    releaseRestart('placement-service');

    await cameBack('placement-service', oldPid);
    const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect(created.status).toBe(201);
    const finished = await waitForRun(tenant, Run.parse(created.body.data).id);
    // Two CI runs saw this run still queued after 30 s, as when the kill lands inside the runner's admission, whose
    // transaction MongoDB keeps open (abandoned-transactions.int.test.ts reproduces that). Say where it stood.
    expect(finished.status, `${JSON.stringify(finished)}\n${logTail('placement-service')}\n${logTail('attempt-worker')}`).toBe('succeeded');
    expect(pidsBesides('placement-service')).toEqual(others);
    expect(crashes()).toHaveLength(2);
    expect(supervisor.restarts('placement-service')).toBe(1);
  });
});
