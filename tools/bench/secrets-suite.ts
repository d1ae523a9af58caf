// Secret writes through the gateway and binding resolution (the workers' internal call)
// against a bare Express app doing one native-driver insert / find on the same server.
import { randomBytes } from 'node:crypto';
import { cpuTable, RESULT_HEADER, resultRow, type Bench, type Target } from './harness.ts';
import { resolutionCall, type SuiteContext } from './suite-context.ts';

const SECRETS = 256;
const BINDINGS = 64;

/** Cycles through `count` names, so that the load spreads over many secrets or bindings. */
function cycling(count: number, build: (i: number) => { path?: string; body?: string }): Target['setupRequest'] {
  let next = 0;
  return (request) => {
    const i = next;
    next = (next + 1) % count;
    return { ...request, ...build(i) };
  };
}

export async function secretsSuite(bench: Bench, context: SuiteContext): Promise<string[]> {
  const { stack, auth } = context;
  const { servers, services } = stack;
  const api = `${services.gatewayUrl}/api/v1`;
  const json = { ...auth, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${api}${path}`, { method, headers: json, body: JSON.stringify(body) });
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}`);
    return (await response.json()) as { data: { id: string } };
  };
  const environment = await call('POST', '/environments', { name: 'secrets-bench', storage_prefix: 's3://lake/sb', executor: 'remote' });
  const value = () => randomBytes(48).toString('base64');
  for (let i = 0; i < SECRETS; i += 1) await call('PUT', `/environments/secrets-bench/secrets/s${i}`, { value: value() });
  for (let i = 0; i < BINDINGS; i += 1) {
    await call('PUT', `/environments/secrets-bench/bindings/b${i}`, {
      config: { host: `db-${i}.internal`, port: 5432, database: 'analytics' },
      secret_refs: { password: `s${(2 * i) % SECRETS}`, token: `s${(2 * i + 1) % SECRETS}` },
    });
  }

  const bare = await bench.startBaseline('express-secret-store.mjs', {
    MONGO_URL: servers.mongo.adminUrl,
    MONGO_DB: services.databases['secrets-service'],
  });
  bench.accounted.clear();
  bench.accounted.set('load generator', process.pid);
  bench.accounted.set('mongodb server', servers.mongo.process?.pid);
  bench.accounted.set('bare app', bare.child.pid);
  bench.accounted.set('gateway', services.processes.gateway.pid);
  bench.accounted.set('secrets-service', services.processes['secrets-service'].pid);
  bench.accounted.set('placement-service', services.processes['placement-service'].pid);

  const body = JSON.stringify({ value: value() });
  const [bareInsert, secretWrite] = await bench.measurePair(
    {
      name: 'bare Express + native insertOne',
      url: `${bare.url}/secrets/s0`,
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body,
      setupRequest: cycling(SECRETS, (i) => ({ path: `/secrets/s${i}` })),
    },
    {
      name: 'gateway PUT /environments/:name/secrets/:secret (rotation)',
      url: `${api}/environments/secrets-bench/secrets/s0`,
      method: 'PUT',
      headers: json,
      body,
      setupRequest: cycling(SECRETS, (i) => ({ path: `/api/v1/environments/secrets-bench/secrets/s${i}` })),
    },
  );
  const [bareFind, resolution] = await bench.measurePair(
    {
      name: 'bare Express + native findOne',
      url: `${bare.url}/resolve`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      setupRequest: cycling(SECRETS, (i) => ({ body: JSON.stringify({ name: `s${i}` }) })),
    },
    {
      name: 'binding resolution, 2 secrets (secrets-service internal)',
      ...resolutionCall(context, 'bench/attempt-runner'),
      method: 'POST',
      setupRequest: cycling(BINDINGS, (i) => ({ body: JSON.stringify({ environment_id: environment.data.id, binding: `b${i}` }) })),
    },
  );

  return [
    '### Secrets',
    '',
    ...RESULT_HEADER,
    resultRow(bareInsert),
    resultRow(secretWrite, bareInsert),
    resultRow(bareFind),
    resultRow(resolution, bareFind),
    '',
    `Medians of ${bench.settings.rounds} interleaved rounds at ${bench.settings.connections} connections. A secret write rotates one of ${SECRETS} secrets (one transaction: the row moves to its next version and the version, sealed under a fresh data key, is inserted); a resolution reads one of ${BINDINGS} bindings, its 2 secret rows and their sealed current versions (no cache: one binding read, one read of both rows by name, one read of both versions by id), decrypts both and inserts the audit record.`,
    '',
    'CPU milliseconds per request by process:',
    '',
    ...cpuTable(bench.accounted, [bareInsert, secretWrite, bareFind, resolution]),
  ];
}
