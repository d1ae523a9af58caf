// `npm run bench`: the gateway against bare baselines, measured in one run on one machine.
// Every target gets the same keep-alive connections, warm-up and duration; the ratios
// compare targets measured minutes apart on the same servers.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { freePort } from '@envengine/backing-servers';
import { issueToken, startBackingServers, startServiceProcesses, withTokenStore } from '@envengine/dev-stack';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
  },
});
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);

interface Measurement {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function measure(
  name: string,
  url: string,
  headers: Record<string, string> = {},
  withConnections = connections,
): Promise<Measurement> {
  await autocannon({ url, connections: withConnections, duration: warmup, headers });
  const result = await autocannon({ url, connections: withConnections, duration, headers });
  const measurement = {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
  console.error(`  ${name}: ${measurement.rps.toFixed(0)} req/s, p50 ${measurement.p50} ms, p99 ${measurement.p99} ms`);
  return measurement;
}

async function startBaseline(file: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = fork(fileURLToPath(new URL(`./baselines/${file}`, import.meta.url)), [], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

function rssMegabytes(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kb / 1024;
}

const dataDir = mkdtempSync(join(tmpdir(), 'envengine-bench-'));
const report = (line: string) => console.error(`bench: ${line}`);
const servers = await startBackingServers({ dataDir, report, ports: 'random', temporalHeadless: true, persistRedis: false });
const services = await startServiceProcesses({
  dataDir,
  ports: 'random',
  mongoUrl: servers.mongo.url,
  redisUrl: servers.redis.url,
  temporalAddress: servers.temporal.url,
  // The rate limit would cut the load short; its check still runs on every request.
  env: { RATE_LIMIT_PER_SECOND: '10000000', RATE_LIMIT_BURST: '10000000' },
});
const baselines: ChildProcess[] = [];
try {
  const { tenant, token } = await withTokenStore(servers.mongo.url, services.databases.gateway, (tokens) =>
    issueToken(tokens, 'bench', 'bench'),
  );
  const auth = { authorization: `Bearer ${token.token}` };
  const created = await fetch(`${services.gatewayUrl}/api/v1/environments`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'prod', storage_prefix: 's3://lake/prod', executor: 'local' }),
  });
  if (created.status !== 201) throw new Error(`creating the environment answered ${created.status}`);

  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idle = Object.fromEntries(
    Object.entries(services.processes).map(([name, child]) => [name, rssMegabytes(child.pid)]),
  );

  const nodeHello = await startBaseline('node-http-hello.mjs', {});
  const expressHello = await startBaseline('express-hello.mjs', {});
  const expressFindOne = await startBaseline('express-findone.mjs', {
    MONGO_URL: servers.mongo.url,
    MONGO_DB: services.databases['placement-service'],
    TENANT_ID: tenant.id,
  });
  baselines.push(nodeHello.child, expressHello.child, expressFindOne.child);

  console.error(`measuring: ${connections} connections, ${warmup} s warm-up, ${duration} s each`);
  const results = {
    nodeHello: await measure('bare node:http hello', `${nodeHello.url}/`),
    expressHello: await measure('bare Express hello', `${expressHello.url}/hello`),
    gatewayTrivial: await measure('gateway GET /healthz', `${services.gatewayUrl}/healthz`),
    gatewayAuthOnly: await measure('gateway authenticated 404 (auth + rate limit, no upstream)', `${services.gatewayUrl}/api/v1/no-such-route`, auth),
    expressFindOne: await measure('bare Express + native findOne', `${expressFindOne.url}/environments/prod`),
    gatewayGetEnv: await measure('gateway GET /api/v1/environments/prod', `${services.gatewayUrl}/api/v1/environments/prod`, auth),
    // One connection: latency without queueing, which at saturation on 2 cores would
    // measure throughput (Little's law) rather than what the extra hop adds.
    expressFindOneSerial: await measure('bare Express + native findOne, 1 connection', `${expressFindOne.url}/environments/prod`, {}, 1),
    gatewayGetEnvSerial: await measure('gateway GET /api/v1/environments/prod, 1 connection', `${services.gatewayUrl}/api/v1/environments/prod`, auth, 1),
  };
  const afterLoad = Object.fromEntries(
    Object.entries(services.processes).map(([name, child]) => [name, rssMegabytes(child.pid)]),
  );

  const row = (m: Measurement, baseline?: Measurement) =>
    `| ${m.name} | ${m.rps.toFixed(0)} | ${m.p50} | ${m.p99} | ${baseline ? `${(m.rps / baseline.rps).toFixed(2)}x ${baseline.name}` : '—'} | ${m.non2xx}/${m.errors} |`;
  const lines = [
    `Node ${process.version}, ${connections} keep-alive connections, ${duration} s per target after ${warmup} s warm-up, MongoDB-wire server: ${servers.mongo.source === 'go-build' ? 'FerretDB v1.24.2 (SQLite)' : servers.mongo.url}.`,
    '',
    '| target | req/s | p50 ms | p99 ms | ratio | non-2xx/errors |',
    '|---|---:|---:|---:|---|---:|',
    row(results.nodeHello),
    row(results.expressHello, results.nodeHello),
    row(results.gatewayTrivial, results.expressHello),
    row(results.gatewayAuthOnly, results.expressHello),
    row(results.expressFindOne),
    row(results.gatewayGetEnv, results.expressFindOne),
    row(results.expressFindOneSerial),
    row(results.gatewayGetEnvSerial, results.expressFindOneSerial),
    '',
    `GET /environments/:name through the gateway adds ${(results.gatewayGetEnvSerial.p99 - results.expressFindOneSerial.p99).toFixed(2)} ms to the bare findOne p99 on one connection (p50: +${(results.gatewayGetEnvSerial.p50 - results.expressFindOneSerial.p50).toFixed(2)} ms), and ${(results.gatewayGetEnv.p99 - results.expressFindOne.p99).toFixed(2)} ms at ${connections} connections, where both are saturated.`,
    '(the authenticated 404 answers 404 by design; it measures the gateway\'s own pipeline)',
    '',
    '| service | RSS idle MB | RSS after load MB |',
    '|---|---:|---:|',
    ...Object.keys(idle).map((name) => `| ${name} | ${idle[name]!.toFixed(0)} | ${afterLoad[name]!.toFixed(0)} |`),
  ];
  console.log(lines.join('\n'));
} finally {
  for (const child of baselines) child.kill('SIGTERM');
  await services.stop();
  await servers.stop();
}
