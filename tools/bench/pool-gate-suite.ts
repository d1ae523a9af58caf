// The pool gate (issue 35): what it costs a pool worker to reach its queue through the gate
// rather than Redis itself. A BullMQ Worker signed in as a pool user takes empty jobs off
// its tenant's queue, through the gate and then straight from Redis, in alternating rounds
// of the same stack; the engine's own producer fills the queue before each round.
import { createRequire } from 'node:module';
import { Worker } from 'bullmq';
import { AttemptQueueProducer, attemptQueueKeyName, ATTEMPT_QUEUE_PREFIX, connectPoolRedis, sendScriptsByShaOnly } from '@envengine/attempt-queues';
import { PoolCredentialIssued, type AttemptJob } from '@envengine/contracts';
import { connectRedis, everyRedisServer, type RedisConnection } from '@envengine/redis-connections';
import { newId } from '@envengine/resource-ids';
import { ApiClient } from '@envengine/test-harness';
import { median, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

const JOBS = 2_000;
const ROUNDS = 3;
const CONCURRENCY = 8;

export async function poolGateSuite(_bench: Bench, { stack, token, tenantId }: SuiteContext): Promise<string[]> {
  // A pool user may only EVALSHA: this process sends every script so, and loads the producer's.
  sendScriptsByShaOnly();
  const admin = connectRedis(stack.servers.redis.adminUrl, { maxRetriesPerRequest: null });
  await loadEveryBullmqScript(admin);
  const issued = await new ApiClient(`${stack.services.gatewayUrl}/api/v1`, token).post('/pool/credentials', {});
  if (issued.status !== 201) throw new Error(`issuing a pool credential answered ${issued.status}: ${issued.text.slice(0, 200)}`);
  const credential = PoolCredentialIssued.parse(issued.body.data);
  const producer = new AttemptQueueProducer(admin);
  /** Jobs a second taken off the queue by a Worker on this Redis URL, from a full queue to an empty one. */
  const drain = async (redisUrl: string): Promise<number> => {
    await producer.enqueueMany(
      Array.from({ length: JOBS }, () => ({ job: { attempt_id: newId('att'), run_id: newId('run'), tenant_id: tenantId, dispatch: 0 } satisfies AttemptJob, executor: 'remote' as const })),
    );
    const connection = connectPoolRedis(redisUrl, credential.redis);
    let done = 0;
    let finished!: () => void;
    const all = new Promise<void>((resolve) => (finished = resolve));
    const started = performance.now();
    const worker = new Worker(attemptQueueKeyName(credential.queue), async () => {
      done += 1;
      if (done === JOBS) finished();
    }, { connection, prefix: ATTEMPT_QUEUE_PREFIX, concurrency: CONCURRENCY });
    await all;
    const seconds = (performance.now() - started) / 1000;
    await worker.close();
    connection.disconnect();
    return JOBS / seconds;
  };
  const rates = { gate: [] as number[], direct: [] as number[] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      rates.gate.push(await drain(credential.redis.url ?? stack.services.poolGateUrl));
      rates.direct.push(await drain(stack.servers.redis.url));
    }
  } finally {
    await producer.close();
    admin.disconnect();
  }
  const [gate, direct] = [median(rates.gate), median(rates.direct)];
  return [
    '### Pool gate',
    '',
    `A BullMQ Worker (concurrency ${CONCURRENCY}) signed in as a pool user takes ${JOBS} empty jobs off its queue, through the pool gate and straight from Redis, ${ROUNDS} alternating rounds each; medians.`,
    '',
    '| path | jobs/s | ratio |',
    '|---|---:|---:|',
    `| Redis itself (baseline) | ${direct.toFixed(0)} | 1.00x |`,
    `| the pool gate | ${gate.toFixed(0)} | ${(gate / direct).toFixed(2)}x |`,
  ];
}

async function loadEveryBullmqScript(redis: RedisConnection): Promise<void> {
  const scripts = createRequire(import.meta.url)('bullmq/dist/cjs/scripts/index.js') as Record<string, { content: string }>;
  const { servers, release } = await everyRedisServer(redis);
  try {
    for (const { server } of servers) for (const script of Object.values(scripts)) await server.call('SCRIPT', 'LOAD', script.content);
  } finally {
    release();
  }
}
