import { pack } from 'msgpackr';
import { QueueKeys, RedisQueueBackend } from 'bullmq';
import { describe, expect, it } from 'vitest';
import type { GateVerdict } from '@envengine/redis-gate';
import { ATTEMPT_QUEUE_PREFIX, attemptJobId, attemptQueueKeyBase, attemptQueueKeyName, tenantAttemptQueue } from './attempt-queues.ts';
import { poolWorkerScripts } from './pool-acl.ts';
import { POOL_SCRIPT_BOUNDS, poolGatePolicy, type PoolWriteBudget } from './pool-gate-policy.ts';

const tenant = 'ten_01m813w5p0mba0fr1w8mf0qssv';
const queue = tenantAttemptQueue(tenant);
const base = attemptQueueKeyBase(queue);
const jobId = attemptJobId({ attempt_id: 'att_01m813w6h15hs4v0df5drka0xx', dispatch: 0 });
const handedBack = attemptJobId({ attempt_id: 'att_01m813w6h15hs4v0df5drka0xx', dispatch: 3 });
/** BullMQ's lock tokens: `<worker uuid>:<n>`. */
const token = '3f1c2b7e-5d4a-4c1b-9e8f-0a1b2c3d4e5f:1';
const scripts = new Map(poolWorkerScripts().map((script) => [script.name, script]));

/** The script calls bullmq's own backend makes for a Worker on the tenant's queue, caught instead of sent (as ioredis would send them). */
function realCalls(workerOptions: Record<string, unknown> = {}) {
  const calls: Array<{ name: string; args: unknown[] }> = [];
  const client = {
    runCommand: async (name: string, args: unknown[]) => {
      calls.push({ name: name.split(':')[0]!, args });
      return name.startsWith('moveToActive') ? [] : 0;
    },
  };
  const name = attemptQueueKeyName(queue);
  const keys = new QueueKeys(ATTEMPT_QUEUE_PREFIX);
  const opts = { prefix: ATTEMPT_QUEUE_PREFIX, lockDuration: 30_000, maxStalledCount: 1, stalledInterval: 30_000, removeOnComplete: undefined, removeOnFail: undefined, ...workerOptions };
  const backend = new RedisQueueBackend({ client: Promise.resolve(client) } as never, name, keys.getKeys(name), (type: string) => keys.toKey(name, type), opts as never, undefined, false);
  const job = { id: jobId, opts: { attempts: 1 } } as never;
  const sync = (scriptName: string, args: unknown[]) => calls.push({ name: scriptName, args });
  // Its argument builders, some of them protected: what its public methods send.
  const args = backend as unknown as Record<'moveToFinishedArgs' | 'moveStalledJobsToWaitArgs' | 'retryJobArgs' | 'moveToDelayedArgs' | 'getRateLimitTtlArgs' | 'isMaxedArgs', (...rest: unknown[]) => unknown[]>;
  return {
    calls,
    backend,
    async all() {
      await backend.moveToActive(token, undefined as never);
      sync('moveToFinished', args.moveToFinishedArgs(job, '"succeeded"', 'returnvalue', true, 'completed', token, Date.now(), true));
      sync('moveToFinished', args.moveToFinishedArgs(job, 'user code failed', 'failedReason', true, 'failed', token, Date.now(), false, { failedReason: 'user code failed', stacktrace: '[]' }));
      await backend.extendLock(jobId, token, 30_000, client as never);
      await backend.extendLocks([jobId, handedBack], [token, `${token}0`], 30_000);
      sync('moveStalledJobsToWait', args.moveStalledJobsToWaitArgs());
      sync('retryJob', args.retryJobArgs(jobId, false, token, { fieldsToUpdate: { failedReason: 'x', stacktrace: '[]' } }));
      sync('retryJob', args.retryJobArgs(jobId, true, token));
      sync('moveToDelayed', args.moveToDelayedArgs(jobId, Date.now(), token, 1000, { fetchNext: true, fieldsToUpdate: { failedReason: 'x' } }));
      sync('moveToDelayed', args.moveToDelayedArgs(handedBack, Date.now(), token, 0));
      await backend.moveJobFromActiveToWait(jobId, token);
      sync('getRateLimitTtl', args.getRateLimitTtlArgs(undefined));
      sync('isMaxed', args.isMaxedArgs());
      return calls;
    },
  };
}

/** An argument as ioredis writes it: a Buffer as is, null and undefined as empty, anything else as its string. */
const asArgument = (value: unknown) => (Buffer.isBuffer(value) ? value : Buffer.from(value === undefined || value === null ? '' : String(value)));
function evalsha(name: string, args: readonly unknown[]): Buffer[] {
  const script = scripts.get(name)!;
  return ['EVALSHA', script.sha1, String(script.keys), ...args].map(asArgument);
}

const policy = poolGatePolicy({ redisVersion: '7.2.4' });
const verdict = (command: Buffer[]): GateVerdict => policy(command);
const refusal = (command: Buffer[]) => {
  const answer = verdict(command);
  return 'refuse' in answer ? answer.refuse : 'passed';
};

describe("the pool gate's policy", () => {
  it("passes every call bullmq's Worker makes on its queue, routed by the queue's keys", async () => {
    const calls = await realCalls().all();
    expect(new Set(calls.map((call) => call.name))).toEqual(new Set(scripts.keys()));
    for (const call of calls) {
      const command = evalsha(call.name, call.args);
      const answer = verdict(command);
      expect(answer, `${call.name}: ${'refuse' in answer ? answer.refuse : ''}`).toMatchObject({ forward: 'keys' });
      const keys = (answer as unknown as { keys: Buffer[] }).keys.map(String);
      expect(keys.length).toBe(scripts.get(call.name)!.keys);
      for (const key of keys) expect(key.startsWith(base), key).toBe(true);
    }
    // Its blocking wait, and its connection's name.
    expect(verdict(['BZPOPMIN', `${base}marker`, '10'].map(asArgument))).toEqual({ forward: 'keys', keys: [Buffer.from(`${base}marker`)] });
    expect(verdict(['CLIENT', 'SETNAME', `bull:${Buffer.from(attemptQueueKeyName(queue)).toString('base64')}`].map(asArgument))).toEqual({ forward: 'home' });
  });

  it("refuses a key prefix that is not the queue's own (the lock and job keys moveToActive builds from it)", () => {
    const [moveToActive] = realCallsSync('moveToActive');
    for (const foreign of [`${base}fresh-1:`, `${base}x`, 'envengine:{attempts-local}:', `${ATTEMPT_QUEUE_PREFIX}:{${queue}}`, '']) {
      const args = [...moveToActive!.args];
      args[11] = foreign;
      expect(refusal(evalsha('moveToActive', args)), foreign).toMatch(/^NOPERM the pool gate does not pass moveToActive with argument 1 refused: the key prefix must be the queue's own/);
    }
  });

  it("refuses keys that are not exactly the queue's own names, or of two queues", () => {
    const [moveToActive] = realCallsSync('moveToActive');
    const other = attemptQueueKeyBase(tenantAttemptQueue('ten_01m813w5p0mba0fr1w8mf0qssw'));
    for (const [index, key] of <Array<[number, string]>>[[0, `${base}wait2`], [3, `${base}fresh:events`], [10, `${other}marker`], [0, 'elsewhere'], [0, `${base}`]]) {
      const args = [...moveToActive!.args];
      args[index] = key;
      expect(refusal(evalsha('moveToActive', args)), key).toMatch(/^NOPERM the pool gate does not pass (moveToActive|EVALSHA)/);
    }
    // The job's key and lock follow the job id argument, which is an attempt's job id.
    const extend = realCallsSync('extendLock')[0]!.args;
    expect(refusal(evalsha('extendLock', [`${base}other:lock`, ...extend.slice(1)]))).toMatch(/key 1 not the queue's own/);
    expect(refusal(evalsha('extendLock', [`${base}x:lock`, extend[1], extend[2], extend[3], 'x']))).toMatch(/argument 3 refused: a job id must be an attempt job id/);
  });

  it('refuses a huge or odd lock token, an out-of-range lock duration, and options it does not know', () => {
    const [moveToActive] = realCallsSync('moveToActive');
    const withOpts = (opts: Record<string, unknown>) => evalsha('moveToActive', [...moveToActive!.args.slice(0, 13), pack(opts)]);
    // Positive control: BullMQ's own options pass.
    expect(refusal(withOpts({ token, lockDuration: 30_000 }))).toBe('passed');
    expect(refusal(withOpts({ token: 'a'.repeat(250 * 1024), lockDuration: 30_000 }))).toMatch(/options\.token: a lock token is 1 to 128 characters/);
    expect(refusal(withOpts({ token: 'a'.repeat(POOL_SCRIPT_BOUNDS.maxTokenLength + 1), lockDuration: 30_000 }))).toMatch(/options\.token/);
    expect(refusal(withOpts({ token: 'a'.repeat(POOL_SCRIPT_BOUNDS.maxTokenLength), lockDuration: 30_000 }))).toBe('passed');
    expect(refusal(withOpts({ token: 'x y', lockDuration: 30_000 }))).toMatch(/options\.token/);
    for (const lockDuration of [0, 999, POOL_SCRIPT_BOUNDS.maxLockDurationMs + 1, 1e12, -1, 1.5, '30000']) {
      expect(refusal(withOpts({ token, lockDuration })), String(lockDuration)).toMatch(/options\.lockDuration: must be an integer from 1000 to 120000/);
    }
    expect(refusal(withOpts({ token }))).toMatch(/options\.lockDuration is required/);
    expect(refusal(withOpts({ token, lockDuration: 30_000, limiter: { max: 1e9, duration: 1000 } }))).toMatch(/options\.limiter: max must be an integer/);
    expect(refusal(withOpts({ token, lockDuration: 30_000, limiter: { max: 1, duration: 1, groupKey: 'x' } }))).toMatch(/options\.limiter: has a field/);
    expect(refusal(withOpts({ token, lockDuration: 30_000, name: 'n'.repeat(POOL_SCRIPT_BOUNDS.maxWorkerNameLength + 1) }))).toMatch(/options\.name/);
    expect(refusal(withOpts({ token, lockDuration: 30_000, extra: 1 }))).toMatch(/options have a field the gate does not take \("extra"\)/);
    expect(refusal(evalsha('moveToActive', [...moveToActive!.args.slice(0, 13), 'not msgpack \xc1']))).toMatch(/NOPERM/);
    // A lock renewed for longer than the bound, or a stalled check set for long.
    const extend = realCallsSync('extendLock')[0]!.args;
    expect(refusal(evalsha('extendLock', [extend[0], extend[1], extend[2], 10 ** 9, extend[4]]))).toMatch(/argument 2 refused: a lock duration \(ms\) must be an integer/);
    const stalled = realCallsSync('moveStalledJobsToWait')[0]!.args;
    expect(refusal(evalsha('moveStalledJobsToWait', [...stalled.slice(0, 12), 10 ** 9]))).toMatch(/argument 4 refused/);
  });

  it('refuses a finish that keeps the job or metrics, fields a job is not given, and a wrong number of arguments', () => {
    const [finish] = realCallsSync('moveToFinished');
    const withOpts = (opts: Record<string, unknown>) => evalsha('moveToFinished', [...finish!.args.slice(0, 21), pack(opts), '']);
    expect(refusal(withOpts({ token, keepJobs: { count: 0 }, lockDuration: 30_000, attempts: 1, maxMetricsSize: '' }))).toBe('passed');
    expect(refusal(withOpts({ token, keepJobs: { count: -1 } }))).toMatch(/keepJobs: must be \{count: 0\}/);
    expect(refusal(withOpts({ token, keepJobs: { count: 0, age: 1 } }))).toMatch(/keepJobs/);
    expect(refusal(withOpts({ token, keepJobs: { count: 0 }, maxMetricsSize: 1000 }))).toMatch(/maxMetricsSize/);
    expect(refusal(evalsha('moveToFinished', [...finish!.args.slice(0, 22), pack(['progress', 'x'.repeat(100)])]))).toMatch(/a job's field the gate does not let a worker set \("progress"\)/);
    expect(refusal(evalsha('moveToFinished', [...finish!.args.slice(0, 22), '', 'extra']))).toMatch(/with 10 arguments \(it takes 8 to 9\)/);
    // Completed into the failed set, or the job's key another's.
    const args = [...finish!.args];
    args[10] = `${base}failed`;
    expect(refusal(evalsha('moveToFinished', args))).toMatch(/key 11 not the queue's own "completed"/);
    const swapped = [...finish!.args];
    swapped[11] = `${base}att_01m813w6h15hs4v0df5drka0xy`;
    expect(refusal(evalsha('moveToFinished', swapped))).toMatch(/key 12/);
  });

  it('refuses a BZPOPMIN of anything but the marker, and a long CLIENT SETNAME', () => {
    expect(refusal(['BZPOPMIN', `${base}wait`, '10'].map(asArgument))).toMatch(/not a queue's marker/);
    expect(refusal(['BZPOPMIN', `${base}marker`, `${base}marker`, '10'].map(asArgument))).toMatch(/more than one key/);
    expect(refusal(['BZPOPMIN', `${base}marker`, '0'].map(asArgument))).toBe('passed');
    expect(refusal(['BZPOPMIN', `${base}marker`, '100000'].map(asArgument))).toMatch(/timeout/);
    expect(refusal(['CLIENT', 'SETNAME', 'n'.repeat(100_000)].map(asArgument))).toMatch(/CLIENT SETNAME of a name over 256 bytes/);
    expect(refusal(['CLIENT', 'SETNAME', 'n'.repeat(256)].map(asArgument))).toBe('passed');
  });

  it('answers INFO itself with the server version BullMQ checks and nothing of the server', () => {
    for (const command of [['INFO'], ['INFO', 'everything'], ['info', 'clients']]) {
      const answer = verdict(command.map(asArgument));
      expect('answer' in answer).toBe(true);
      const text = (answer as { answer: Buffer }).answer.toString();
      expect(text).toMatch(/^\$\d+\r\n# Server\r\nredis_version:7\.2\.4\r\nloading:0\r\n/);
      expect(text).not.toMatch(/connected_clients|used_memory|keyspace|db0|executable|config_file/);
    }
  });

  it("refuses a write past the queue's memory budget, and passes reads", () => {
    const asked: Array<[string, number]> = [];
    const full: PoolWriteBudget = { refusal: (name, bytes) => (asked.push([name, bytes]), 'the budget is used up') };
    const budgeted = poolGatePolicy({ redisVersion: '7.2.4', budget: full });
    const [moveToActive] = realCallsSync('moveToActive');
    const answer = budgeted(evalsha('moveToActive', moveToActive!.args));
    expect(answer).toEqual({ refuse: 'OOM the budget is used up' });
    expect(asked[0]![0]).toBe(queue);
    expect(budgeted(evalsha('isMaxed', realCallsSync('isMaxed')[0]!.args))).toMatchObject({ forward: 'keys' });
  });
});

/** The named script's calls of `realCalls().all()`, made at once (their arguments do not depend on replies). */
function realCallsSync(name: string): Array<{ name: string; args: unknown[] }> {
  return cachedCalls.filter((call) => call.name === name);
}
const cachedCalls = await realCalls().all();
