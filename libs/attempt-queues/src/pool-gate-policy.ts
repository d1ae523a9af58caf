import { unpack } from 'msgpackr';
import { encodeBulk, type CommandLimits, type GatePolicy, type GateVerdict } from '@envengine/redis-gate';
import { ATTEMPT_JOB_ID_PATTERN, attemptQueueKeyBase, attemptQueueOfKey } from './attempt-queues.ts';
import { poolWorkerScripts } from './pool-acl.ts';

/**
 * What a pool worker may send through the pool gate (the placement-service's, which pool
 * workers reach instead of Redis): no plain command that reads or writes a key, since
 * Redis's ACL cannot take those from a user who runs scripts that use them. Argument
 * sizes are bounded: a job's return value, failure reason, stack trace or log line is at
 * most `maxArgumentBytes`.
 */
export const POOL_GATE_LIMITS: CommandLimits = { maxArgumentBytes: 256 * 1024, maxArguments: 1024, maxCommandBytes: 1024 * 1024 };

/**
 * The bounds on what a worker script's arguments may ask Redis to keep (bullmq 6.7's
 * Worker sends far less): a lock token is `<worker uuid>:<n>`, a lock lasts 30 s and is
 * renewed every 15 s, the stalled check runs every 30 s.
 */
export const POOL_SCRIPT_BOUNDS = {
  /** Characters of a lock token (BullMQ's are 38 or so). */
  maxTokenLength: 128,
  /** A lock's (and the stalled check's) duration, in ms: BullMQ's default is 30,000. */
  minLockDurationMs: 1_000,
  maxLockDurationMs: 120_000,
  /** A worker's name (BullMQ's `name` option), stored in each job it takes. */
  maxWorkerNameLength: 256,
  /** Jobs one `extendLocks` renews (a worker's concurrency). */
  maxLocksPerCall: 256,
  /** A job's delay (`moveToDelayed`): one day. */
  maxDelayMs: 86_400_000,
  /** A connection name (`CLIENT SETNAME`; BullMQ's are `bull:<base64 of the queue name>`). */
  maxClientNameLength: 256,
  /** `BZPOPMIN`'s timeout, in seconds. */
  maxBlockSeconds: 60,
} as const;

/** What a pool's scripts are checked against besides their arguments: its Redis memory (`PoolMemoryBudget`). */
export interface PoolWriteBudget {
  /** Undefined when the queue may take a write of `bytes` more; else why not (the queue is over its budget). */
  refusal(queue: string, bytes: number): string | undefined;
}

export interface PoolGatePolicyOptions {
  /** The server's version, the one line of INFO a worker needs (BullMQ refuses a Redis older than 5, and picks features by it). */
  redisVersion: string;
  /** A pool's memory budget, checked before every script that writes. */
  budget?: PoolWriteBudget;
}

/** One argument's check: undefined when it passes, else what is wrong with it. */
type ArgumentCheck = (value: Buffer, context: ScriptCall) => string | undefined;

interface ScriptCall {
  /** `envengine:{<queue>}:`, of the queue the command's first key belongs to. */
  base: string;
  argv: readonly Buffer[];
}

interface ScriptSpec {
  /** The Redis keys, as suffixes of the queue's base, in order; computed from ARGV once each argument has passed. */
  keys(argv: readonly string[]): string[];
  /** Each argument's check, in order; the ones after `required` may be left out. */
  argv: ArgumentCheck[];
  required?: number;
  /** Writes to Redis (checked against the budget); the read-only scripts are not. */
  writes: boolean;
}

const DECIMAL = /^(?:0|[1-9][0-9]{0,15})$/;

const integerIn =
  (min: number, max: number, what: string): ArgumentCheck =>
  (value) => {
    const text = value.toString('latin1');
    if (!DECIMAL.test(text) || Number(text) < min || Number(text) > max) return `${what} must be an integer from ${min} to ${max}`;
    return undefined;
  };
const timestamp = integerIn(0, Number.MAX_SAFE_INTEGER, 'a timestamp');
const oneOf =
  (...allowed: string[]): ArgumentCheck =>
  (value) =>
    allowed.includes(value.toString('latin1')) ? undefined : `must be one of ${allowed.map((item) => JSON.stringify(item || '')).join(', ')}`;
const prefix: ArgumentCheck = (value, { base }) => (value.toString('latin1') === base ? undefined : "the key prefix must be the queue's own");
const jobId: ArgumentCheck = (value) => (ATTEMPT_JOB_ID_PATTERN.test(value.toString('latin1')) ? undefined : 'a job id must be an attempt job id');
const TOKEN = new RegExp(`^[A-Za-z0-9:._-]{1,${POOL_SCRIPT_BOUNDS.maxTokenLength}}$`);
const tokenText = (value: unknown) => (typeof value === 'string' && TOKEN.test(value) ? undefined : `a lock token is 1 to ${POOL_SCRIPT_BOUNDS.maxTokenLength} characters of [A-Za-z0-9:._-]`);
const token: ArgumentCheck = (value) => tokenText(value.toString('latin1'));
const lockDuration = integerIn(POOL_SCRIPT_BOUNDS.minLockDurationMs, POOL_SCRIPT_BOUNDS.maxLockDurationMs, 'a lock duration (ms)');
const anything: ArgumentCheck = () => undefined;

/** A msgpack-ed object (as BullMQ packs a script's `opts` with msgpackr): only the named fields, each checked. */
type FieldCheck = (value: unknown) => string | undefined;
const packedObject =
  (fields: Record<string, FieldCheck>, required: readonly string[] = []): ArgumentCheck =>
  (value) => {
    let decoded: unknown;
    try {
      decoded = unpack(value);
    } catch {
      return 'the options are not msgpack';
    }
    if (typeof decoded !== 'object' || decoded === null || Array.isArray(decoded)) return 'the options are not a map';
    for (const [field, fieldValue] of Object.entries(decoded)) {
      const check = fields[field];
      if (!check) return `the options have a field the gate does not take (${JSON.stringify(field.slice(0, 32))})`;
      if (fieldValue === undefined || fieldValue === null) continue;
      const wrong = check(fieldValue);
      if (wrong) return `options.${field}: ${wrong}`;
    }
    for (const field of required) {
      const fieldValue = (decoded as Record<string, unknown>)[field];
      if (fieldValue === undefined || fieldValue === null) return `options.${field} is required`;
    }
    return undefined;
  };
const integerField =
  (min: number, max: number): FieldCheck =>
  (value) =>
    Number.isInteger(value) && (value as number) >= min && (value as number) <= max ? undefined : `must be an integer from ${min} to ${max}`;
const booleanField: FieldCheck = (value) => (typeof value === 'boolean' ? undefined : 'must be a boolean');
const nameField: FieldCheck = (value) => (typeof value === 'string' && value.length <= POOL_SCRIPT_BOUNDS.maxWorkerNameLength ? undefined : `must be a string of at most ${POOL_SCRIPT_BOUNDS.maxWorkerNameLength} characters`);
const limiterField: FieldCheck = (value) => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'must be a map';
  for (const [field, inner] of Object.entries(value)) {
    const check = field === 'max' ? integerField(1, 100_000) : field === 'duration' ? integerField(1, 3_600_000) : undefined;
    if (!check) return `has a field the gate does not take (${JSON.stringify(field.slice(0, 32))})`;
    const wrong = check(inner);
    if (wrong) return `${field} ${wrong}`;
  }
  return undefined;
};
/** What moveToActive (and moveToDelayed, fetching the next job) is told about the lock it takes. */
const lockOptions = packedObject(
  { token: tokenText, lockDuration: integerField(POOL_SCRIPT_BOUNDS.minLockDurationMs, POOL_SCRIPT_BOUNDS.maxLockDurationMs), limiter: limiterField, name: nameField },
  ['token', 'lockDuration'],
);
/** moveToFinished's: the lock's, and that the job is removed (`keepJobs: {count: 0}`), no metrics kept. */
const finishOptions = packedObject(
  {
    token: tokenText,
    lockDuration: integerField(POOL_SCRIPT_BOUNDS.minLockDurationMs, POOL_SCRIPT_BOUNDS.maxLockDurationMs),
    limiter: limiterField,
    name: nameField,
    keepJobs: (value) =>
      typeof value === 'object' && value !== null && Object.keys(value).length === 1 && (value as { count?: unknown }).count === 0
        ? undefined
        : "must be {count: 0}: an attempt's job is removed when it ends",
    attempts: integerField(0, 1000),
    maxMetricsSize: (value) => (value === '' ? undefined : 'must be empty: no metrics are kept'),
    fpof: booleanField,
    cpof: booleanField,
    idof: booleanField,
    rdof: booleanField,
  },
  ['token', 'keepJobs'],
);
/** The fields a failing job's hash is given (`failedReason`, `stacktrace`, the trace context `tm`), msgpack-ed as a flat array; empty when there are none. */
const FIELDS_TO_UPDATE = new Set(['failedReason', 'stacktrace', 'tm']);
const fieldsToUpdate: ArgumentCheck = (value) => {
  if (value.length === 0) return undefined;
  let decoded: unknown;
  try {
    decoded = unpack(value);
  } catch {
    return 'the fields to update are not msgpack';
  }
  if (!Array.isArray(decoded) || decoded.length % 2 !== 0 || decoded.length > 2 * FIELDS_TO_UPDATE.size) return 'the fields to update are not a flat list of fields and values';
  for (let index = 0; index < decoded.length; index += 2) {
    if (!FIELDS_TO_UPDATE.has(decoded[index] as string)) return `a job's field the gate does not let a worker set (${JSON.stringify(String(decoded[index]).slice(0, 32))})`;
  }
  return undefined;
};
/** A msgpack-ed list of at most `maxLocksPerCall` items, each passing `item`. */
const packedList =
  (item: (value: unknown) => string | undefined, what: string): ArgumentCheck =>
  (value) => {
    let decoded: unknown;
    try {
      decoded = unpack(value);
    } catch {
      return `the ${what} are not msgpack`;
    }
    if (!Array.isArray(decoded) || decoded.length > POOL_SCRIPT_BOUNDS.maxLocksPerCall) return `the ${what} are a list of at most ${POOL_SCRIPT_BOUNDS.maxLocksPerCall}`;
    for (const entry of decoded) {
      const wrong = item(entry);
      if (wrong) return wrong;
    }
    return undefined;
  };
const sameLength: ArgumentCheck = (value, { argv }) => {
  try {
    return (unpack(argv[1]!) as unknown[]).length === (unpack(value) as unknown[]).length ? undefined : 'as many job ids as tokens';
  } catch {
    return 'the job ids are not msgpack';
  }
};
const both =
  (...checks: ArgumentCheck[]): ArgumentCheck =>
  (value, context) => {
    for (const check of checks) {
      const wrong = check(value, context);
      if (wrong) return wrong;
    }
    return undefined;
  };

/**
 * Each worker script's keys and arguments, exactly as bullmq 6.7's Worker sends them
 * (`RedisQueueBackend`'s `moveToActive`, `moveToFinishedArgs`, …): every key and every
 * argument a script builds a key from is one of the queue's own names (its base and a
 * fixed suffix, or an attempt's job id), never a prefix a worker picks; every option that
 * sizes what Redis keeps (a lock's token and duration, a worker's name, the fields a job
 * is given) is bounded. `pool-gate-policy.test.ts` checks each against a real Worker's call.
 */
const SCRIPT_SPECS: Record<string, ScriptSpec> = {
  moveToActive: {
    keys: () => ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'marker'],
    argv: [prefix, timestamp, lockOptions],
    writes: true,
  },
  moveToFinished: {
    keys: ([id, , , , target]) => ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', target!, id!, `metrics:${target}`, 'marker'],
    argv: [
      jobId,
      timestamp,
      oneOf('returnvalue', 'failedReason'),
      anything,
      (value, { argv }) => (value.toString('latin1') === (argv[2]!.toString('latin1') === 'returnvalue' ? 'completed' : 'failed') ? undefined : 'a return value completes a job, a failed reason fails it'),
      oneOf('0', '1'),
      prefix,
      finishOptions,
      fieldsToUpdate,
    ],
    required: 8,
    writes: true,
  },
  extendLock: {
    keys: ([, , id]) => [`${id}:lock`, 'stalled'],
    argv: [token, lockDuration, jobId],
    writes: true,
  },
  extendLocks: {
    keys: () => ['stalled'],
    argv: [prefix, packedList(tokenText, 'tokens'), both(packedList((value) => (typeof value === 'string' && ATTEMPT_JOB_ID_PATTERN.test(value) ? undefined : 'a job id must be an attempt job id'), 'job ids'), sameLength), lockDuration],
    writes: true,
  },
  moveStalledJobsToWait: {
    keys: () => ['stalled', 'wait', 'active', 'stalled-check', 'meta', 'paused', 'marker', 'events', 'repeat'],
    argv: [integerIn(0, 10, 'the most stalls of a job'), prefix, timestamp, lockDuration],
    writes: true,
  },
  retryJob: {
    keys: ([, , , id]) => ['active', 'wait', 'paused', id!, 'meta', 'events', 'delayed', 'prioritized', 'pc', 'marker', 'stalled'],
    argv: [prefix, timestamp, oneOf('LPUSH', 'RPUSH'), jobId, token, fieldsToUpdate],
    required: 5,
    writes: true,
  },
  moveToDelayed: {
    keys: ([, , id]) => ['marker', 'active', 'prioritized', 'delayed', id!, 'events', 'meta', 'stalled', 'wait', 'limiter', 'pc'],
    argv: [
      prefix,
      timestamp,
      jobId,
      token,
      integerIn(0, POOL_SCRIPT_BOUNDS.maxDelayMs, 'a delay (ms)'),
      oneOf('0', '1'),
      fieldsToUpdate,
      oneOf('0', '1'),
      (value, { argv }) => (argv[7]!.toString('latin1') === '1' ? lockOptions(value, { argv, base: '' }) : value.length === 0 ? undefined : 'options only when the next job is fetched'),
    ],
    required: 8,
    writes: true,
  },
  moveJobFromActiveToWait: {
    keys: () => ['active', 'wait', 'stalled', 'paused', 'meta', 'limiter', 'prioritized', 'marker', 'events'],
    argv: [jobId, token, (value, { base, argv }) => (value.toString('latin1') === `${base}${argv[0]!.toString('latin1')}` ? undefined : "the job's key must be the queue's own")],
    writes: true,
  },
  getRateLimitTtl: { keys: () => ['limiter', 'meta'], argv: [integerIn(0, 100_000, 'the most jobs')], writes: false },
  isMaxed: { keys: () => ['meta', 'active'], argv: [], writes: false },
};

const REFUSAL = "a pool worker may run the engine's listed BullMQ scripts by EVALSHA, on its queue's own keys with bounded arguments, BZPOPMIN of its queue's marker, INFO and CLIENT SETNAME only";

/**
 * The gate's policy for pool users: EVALSHA of the worker scripts on one queue's own keys
 * with bounded arguments (each checked against the script's spec above), BZPOPMIN of the
 * queue's marker (the blocking wait), INFO (answered by the gate: the server's version
 * only) and CLIENT SETNAME of a bounded name; every other command is answered NOPERM by
 * the gate itself. The queue is the one the command's keys name; Redis then applies the
 * user's ACL (its own tenant's queue keys only) to what passes, so a pool reaches only its
 * own queue. A script that writes is checked against the queue's memory budget first.
 */
export function poolGatePolicy(options: PoolGatePolicyOptions): GatePolicy {
  const specs = new Map(poolWorkerScripts().map((script) => [script.sha1, { name: script.name, spec: SCRIPT_SPECS[script.name] }]));
  for (const [, { name, spec }] of specs) if (!spec) throw new Error(`the pool gate has no spec of BullMQ's "${name}" script`);
  // What BullMQ reads (its version, and that nothing is evicted) and ioredis's ready check (not loading); nothing else of the server's.
  const info = encodeBulk(`# Server\r\nredis_version:${options.redisVersion.replace(/[^0-9A-Za-z.-]/g, '')}\r\nloading:0\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n`);
  const refuse = (what: string): GateVerdict => ({ refuse: `NOPERM the pool gate does not pass ${what}: ${REFUSAL}` });
  return (command) => {
    const name = command[0]!.toString('latin1').toLowerCase();
    switch (name) {
      case 'evalsha': {
        const sha1 = command[1]?.toString('latin1').toLowerCase() ?? '';
        const script = specs.get(sha1);
        if (!script) return refuse('EVALSHA of a script that is not one of the worker scripts');
        const keyCount = Number(command[2]?.toString('latin1'));
        if (!Number.isInteger(keyCount) || keyCount < 0 || keyCount > command.length - 3) return { refuse: "ERR Number of keys can't be greater than number of args" };
        const keys = command.slice(3, 3 + keyCount);
        const argv = command.slice(3 + keyCount);
        const wrong = checkScript(script.spec!, keys, argv);
        if (wrong) return refuse(`${script.name} ${wrong}`);
        if (script.spec!.writes && options.budget) {
          const overBudget = options.budget.refusal(attemptQueueOfKey(keys[0]!.toString('latin1'))!, argv.reduce((sum, arg) => sum + arg.length, 0));
          if (overBudget) return { refuse: `OOM ${overBudget}` };
        }
        return { forward: 'keys', keys };
      }
      case 'bzpopmin': {
        // BullMQ's blocking connection: `BZPOPMIN <queue>:marker <timeout>`.
        if (command.length !== 3) return refuse('BZPOPMIN of more than one key');
        const key = command[1]!.toString('latin1');
        const queue = attemptQueueOfKey(key);
        if (!queue || key !== `${attemptQueueKeyBase(queue)}marker`) return refuse("BZPOPMIN of a key that is not a queue's marker");
        const timeout = command[2]!.toString('latin1');
        if (!/^\d{1,3}(?:\.\d{1,6})?$/.test(timeout) || Number(timeout) > POOL_SCRIPT_BOUNDS.maxBlockSeconds) return refuse(`BZPOPMIN with a timeout over ${POOL_SCRIPT_BOUNDS.maxBlockSeconds} s`);
        return { forward: 'keys', keys: [command[1]!] };
      }
      case 'info':
        return { answer: info };
      case 'client':
        if (command.length === 3 && command[1]!.toString('latin1').toLowerCase() === 'setname') {
          if (command[2]!.length > POOL_SCRIPT_BOUNDS.maxClientNameLength) return refuse(`CLIENT SETNAME of a name over ${POOL_SCRIPT_BOUNDS.maxClientNameLength} bytes`);
          return { forward: 'home' };
        }
        return refuse(`CLIENT ${command[1]?.toString('latin1').toUpperCase().slice(0, 32) ?? ''}`.trim());
      default:
        return refuse(`'${name.slice(0, 32)}'`);
    }
  };
}

/** Undefined when a script's keys and arguments are exactly what its spec allows on one queue; else what is not. */
function checkScript(spec: ScriptSpec, keys: readonly Buffer[], argv: readonly Buffer[]): string | undefined {
  const required = spec.required ?? spec.argv.length;
  if (argv.length < required || argv.length > spec.argv.length) return `with ${argv.length} arguments (it takes ${required === spec.argv.length ? required : `${required} to ${spec.argv.length}`})`;
  const queue = keys.length > 0 ? attemptQueueOfKey(keys[0]!.toString('latin1')) : undefined;
  if (!queue) return "on a key that is not an attempt queue's";
  const base = attemptQueueKeyBase(queue);
  const context = { base, argv };
  for (const [index, value] of argv.entries()) {
    const wrong = spec.argv[index]!(value, context);
    if (wrong) return `with argument ${index + 1} refused: ${wrong}`;
  }
  const expected = spec.keys(argv.map((value) => value.toString('latin1')));
  if (keys.length !== expected.length) return `with ${keys.length} keys (it takes ${expected.length})`;
  for (const [index, key] of keys.entries()) {
    if (key.toString('latin1') !== `${base}${expected[index]}`) return `with key ${index + 1} not the queue's own ${JSON.stringify(expected[index])}`;
  }
  return undefined;
}
