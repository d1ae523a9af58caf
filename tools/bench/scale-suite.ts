// Indexes at scale: single reads by name through the product with 100,000 environments of
// one tenant and 100,000 secrets, against the same reads when the tenant had almost none.
// Seeding goes through the API, so the data has exactly the shape the services write.
import { randomBytes } from 'node:crypto';
import { median, type Bench } from './harness.ts';
import { resolutionCall, type SuiteContext } from './suite-context.ts';

const ENVIRONMENTS = 100_000;
const SECRETS = 100_000;
const SAMPLES = 2_000;
const SEED_CONCURRENCY = 32;

/** Milliseconds of each of `count` sequential calls (one keep-alive connection, as a single client sees it). */
async function latencies(count: number, call: (i: number) => Promise<Response>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = performance.now();
    const response = await call(i);
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`sample ${i} answered ${response.status}`);
    times.push(performance.now() - started);
  }
  return times;
}

/** Runs `count` calls, `concurrency` at a time; answers the rate achieved. */
async function seed(count: number, call: (i: number) => Promise<Response>): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      for (let i = next++; i < count; i = next++) {
        const response = await call(i);
        await response.arrayBuffer();
        if (response.status >= 300) throw new Error(`seeding call ${i} answered ${response.status}`);
      }
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

const p = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor(values.length * q)]!;

export async function scaleSuite(_bench: Bench, context: SuiteContext): Promise<string[]> {
  const { stack, auth } = context;
  const { services } = stack;
  const api = `${services.gatewayUrl}/api/v1`;
  const json = { ...auth, 'content-type': 'application/json' };
  const send = (method: string, path: string, body?: unknown) =>
    fetch(`${api}${path}`, { method, headers: json, body: body === undefined ? undefined : JSON.stringify(body) });
  const resolution = resolutionCall(context, 'bench/scale');
  const resolve = (environmentId: string) => () =>
    fetch(resolution.url, { method: 'POST', headers: resolution.headers, body: JSON.stringify({ environment_id: environmentId, binding: 'warehouse' }) });

  // The same reads on an almost empty tenant: one environment, two secrets.
  await send('POST', '/environments', { name: 'scale', storage_prefix: 's3://lake/scale', executor: 'local' });
  const environmentId = ((await (await send('GET', '/environments/scale')).json()) as { data: { id: string } }).data.id;
  await send('PUT', '/environments/scale/secrets/s0', { value: randomBytes(32).toString('base64') });
  await send('PUT', '/environments/scale/secrets/s1', { value: randomBytes(32).toString('base64') });
  await send('PUT', '/environments/scale/bindings/warehouse', { config: { host: 'db' }, secret_refs: { password: 's0', token: 's1' } });
  const emptyEnvironment = await latencies(SAMPLES, () => send('GET', '/environments/scale'));
  const emptyResolution = await latencies(SAMPLES, resolve(environmentId));

  console.error(`  seeding ${ENVIRONMENTS} environments and ${SECRETS} secrets through the API...`);
  const environmentRate = await seed(ENVIRONMENTS, (i) => send('POST', '/environments', { name: `e${i}`, storage_prefix: `s3://lake/e${i}`, executor: 'local' }));
  const secretRate = await seed(SECRETS, (i) => send('PUT', `/environments/scale/secrets/x${i}`, { value: randomBytes(32).toString('base64') }));

  // Reads spread over the whole key range, so no one page of an index stays hot by chance.
  const fullEnvironment = await latencies(SAMPLES, (i) => send('GET', `/environments/e${(i * 7919) % ENVIRONMENTS}`));
  const fullResolution = await latencies(SAMPLES, resolve(environmentId));

  const row = (name: string, empty: number[], full: number[]) =>
    `| ${name} | ${median(empty).toFixed(2)} | ${median(full).toFixed(2)} | ${(median(full) / median(empty)).toFixed(2)}x | ${p(full, 0.99).toFixed(2)} |`;
  return [
    '### Scale: reads by name with 100,000 environments and 100,000 secrets',
    '',
    '| read (one connection, sequential) | p50 ms, tenant almost empty | p50 ms, 100,000 rows | ratio | p99 ms, 100,000 rows |',
    '|---|---:|---:|---:|---:|',
    row('GET /environments/:name through the gateway', emptyEnvironment, fullEnvironment),
    row('binding resolution (2 secrets looked up by name among 100,002)', emptyResolution, fullResolution),
    '',
    `${SAMPLES} samples each. Seeding through the API at ${SEED_CONCURRENCY} in flight: ${environmentRate.toFixed(0)} environment creates/s, ${secretRate.toFixed(0)} secret writes/s (each a transaction).`,
  ];
}
