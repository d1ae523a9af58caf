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
import { issueToken, startStack, withTokenStore } from '@envengine/dev-stack';
import { summarizeCpuProfiles } from './cpu-profile-summary.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    profile: { type: 'boolean', default: false },
  },
});
const rounds = Number(values.rounds);
const duration = Number(values.duration);
const warmup = Number(values.warmup);
const connections = Number(values.connections);

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSecondsOf(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** Processes whose CPU use each measurement accounts for. */
const accounted = new Map<string, number | undefined>();

interface Measurement {
  name: string;
  /** CPU milliseconds per request, by process, during the measured window. */
  cpuMsPerRequest?: Record<string, number>;
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
  const cpuBefore = new Map([...accounted].map(([process_, pid]) => [process_, cpuSecondsOf(pid)]));
  const result = await autocannon({ url, connections: withConnections, duration, headers });
  const cpuMsPerRequest = Object.fromEntries(
    [...accounted].map(([process_, pid]) => [
      process_,
      ((cpuSecondsOf(pid) - cpuBefore.get(process_)!) * 1000) / Math.max(1, result.requests.total),
    ]),
  );
  const measurement: Measurement = {
    cpuMsPerRequest,
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

const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!;

/**
 * A baseline and its gateway counterpart measured in alternation, `rounds` times, with
 * the median of each metric: the database server's drift over minutes then weighs on
 * both alike instead of on whichever ran during a slow stretch.
 */
async function measurePair(
  baseline: [name: string, url: string, headers?: Record<string, string>],
  gateway: [name: string, url: string, headers?: Record<string, string>],
  withConnections: number,
): Promise<[Measurement, Measurement]> {
  const runs: [Measurement[], Measurement[]] = [[], []];
  for (let round = 1; round <= rounds; round += 1) {
    runs[0].push(await measure(`${baseline[0]} (round ${round})`, baseline[1], baseline[2], withConnections));
    runs[1].push(await measure(`${gateway[0]} (round ${round})`, gateway[1], gateway[2], withConnections));
  }
  const summarize = (name: string, measurements: Measurement[]): Measurement => ({
    name,
    cpuMsPerRequest: Object.fromEntries(
      Object.keys(measurements[0]!.cpuMsPerRequest ?? {}).map((process_) => [
        process_,
        median(measurements.map((m) => m.cpuMsPerRequest![process_]!)),
      ]),
    ),
    rps: median(measurements.map((m) => m.rps)),
    p50: median(measurements.map((m) => m.p50)),
    p99: median(measurements.map((m) => m.p99)),
    non2xx: measurements.reduce((sum, m) => sum + m.non2xx, 0),
    errors: measurements.reduce((sum, m) => sum + m.errors, 0),
  });
  return [summarize(baseline[0], runs[0]), summarize(gateway[0], runs[1])];
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
const stack = await startStack({
  dataDir,
  report,
  ports: 'random',
  temporalHeadless: true,
  persistRedis: false,
  // The rate limit would cut the load short; its check still runs on every request.
  env: {
    RATE_LIMIT_PER_SECOND: '10000000',
    RATE_LIMIT_BURST: '10000000',
    ...(values.profile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(dataDir, 'profiles')}` } : {}),
  },
});
const { servers, services } = stack;
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
  const findOneServer = await startBaseline('express-findone.mjs', {
    MONGO_URL: servers.mongo.url,
    MONGO_DB: services.databases['placement-service'],
    TENANT_ID: tenant.id,
  });
  baselines.push(nodeHello.child, expressHello.child, findOneServer.child);
  accounted.set('load generator', process.pid);
  accounted.set('mongodb server', servers.mongo.process?.pid);
  accounted.set('bare findOne app', findOneServer.child.pid);
  accounted.set('gateway', services.processes.gateway.pid);
  accounted.set('placement-service', services.processes['placement-service'].pid);

  console.error(`measuring: ${connections} connections, ${warmup} s warm-up, ${duration} s each`);
  const results = {
    nodeHello: await measure('bare node:http hello', `${nodeHello.url}/`),
    expressHello: await measure('bare Express hello', `${expressHello.url}/hello`),
    gatewayTrivial: await measure('gateway GET /healthz', `${services.gatewayUrl}/healthz`),
    gatewayAuthOnly: await measure('gateway authenticated 404 (auth + rate limit, no upstream)', `${services.gatewayUrl}/api/v1/no-such-route`, auth),
  };
  const [expressFindOne, gatewayGetEnv] = await measurePair(
    ['bare Express + native findOne', `${findOneServer.url}/environments/prod`],
    ['gateway GET /api/v1/environments/prod', `${services.gatewayUrl}/api/v1/environments/prod`, auth],
    connections,
  );
  // One connection: latency without queueing, which at saturation on 2 cores would
  // measure throughput (Little's law) rather than what the extra hop adds.
  const [expressFindOneSerial, gatewayGetEnvSerial] = await measurePair(
    ['bare Express + native findOne, 1 connection', `${findOneServer.url}/environments/prod`],
    ['gateway GET /api/v1/environments/prod, 1 connection', `${services.gatewayUrl}/api/v1/environments/prod`, auth],
    1,
  );
  const afterLoad = Object.fromEntries(
    Object.entries(services.processes).map(([name, child]) => [name, rssMegabytes(child.pid)]),
  );

  const row = (m: Measurement, baseline?: Measurement) =>
    `| ${m.name} | ${m.rps.toFixed(0)} | ${m.p50} | ${m.p99} | ${baseline ? `${(m.rps / baseline.rps).toFixed(2)}x ${baseline.name}` : '—'} | ${m.non2xx}/${m.errors} |`;
  const lines = [
    `Node ${process.version}, ${connections} keep-alive connections unless said otherwise, ${duration} s per target after ${warmup} s warm-up, MongoDB-wire server: ${servers.mongo.source === 'go-build' ? 'FerretDB v1.24.2 (SQLite)' : servers.mongo.url}.`,
    '',
    '| target | req/s | p50 ms | p99 ms | ratio | non-2xx/errors |',
    '|---|---:|---:|---:|---|---:|',
    row(results.nodeHello),
    row(results.expressHello, results.nodeHello),
    row(results.gatewayTrivial, results.expressHello),
    row(results.gatewayAuthOnly, results.expressHello),
    row(expressFindOne),
    row(gatewayGetEnv, expressFindOne),
    row(expressFindOneSerial),
    row(gatewayGetEnvSerial, expressFindOneSerial),
    '',
    `Rows from the bare findOne down are medians of ${rounds} interleaved rounds. GET /environments/:name through the gateway adds ${(gatewayGetEnvSerial.p99 - expressFindOneSerial.p99).toFixed(0)} ms to the bare findOne p99 on one connection (p50: +${(gatewayGetEnvSerial.p50 - expressFindOneSerial.p50).toFixed(0)} ms), and ${(gatewayGetEnv.p99 - expressFindOne.p99).toFixed(0)} ms at ${connections} connections, where both are saturated.`,
    '(the authenticated 404 answers 404 by design; it measures the gateway\'s own pipeline)',
    '',
    `CPU milliseconds per request by process, at ${connections} connections (where the 2 cores go):`,
    '',
    `| target | ${[...accounted.keys()].join(' | ')} | total |`,
    `|---|${[...accounted.keys()].map(() => '---:').join('|')}|---:|`,
    ...[expressFindOne, gatewayGetEnv].map((m) => {
      const cells = [...accounted.keys()].map((process_) => m.cpuMsPerRequest![process_]!);
      return `| ${m.name} | ${cells.map((ms) => ms.toFixed(3)).join(' | ')} | ${cells.reduce((a, b) => a + b, 0).toFixed(3)} |`;
    }),
    '',
    '| service | RSS idle MB | RSS after load MB |',
    '|---|---:|---:|',
    ...Object.keys(idle).map((name) => `| ${name} | ${idle[name]!.toFixed(0)} | ${afterLoad[name]!.toFixed(0)} |`),
  ];
  console.log(lines.join('\n'));
} finally {
  for (const child of baselines) child.kill('SIGTERM');
  await stack.stop();
}
if (values.profile) {
  // Profiles are written when the services exit; pids name the files.
  const pids = Object.fromEntries(Object.entries(services.processes).map(([name, child]) => [String(child.pid), name]));
  console.log(`\nCPU self time by owner (--profile):\n${summarizeCpuProfiles(join(dataDir, 'profiles'))
    .replace(/CPU\.\d+\.\d+\.(\d+)\.\d+\.\d+\.cpuprofile/g, (file, pid: string) => `${pids[pid] ?? file}`)}`);
}
