// The gateway against bare Express baselines: trivial endpoint, and GET /environments/:name
// against a bare Express app reading the same document with the native driver.
import { cpuTable, median, RESULT_HEADER, resultRow, rssMegabytes, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

export async function gatewaySuite(bench: Bench, { stack, tenantId, auth }: SuiteContext): Promise<string[]> {
  const { servers, services } = stack;
  const { connections, rounds } = bench.settings;
  const created = await fetch(`${services.gatewayUrl}/api/v1/environments`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'prod', storage_prefix: 's3://lake/prod', executor: 'local' }),
  });
  if (created.status !== 201) throw new Error(`creating the environment answered ${created.status}`);

  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idle = Object.fromEntries(Object.entries(services.processes).map(([name, child]) => [name, rssMegabytes(child.pid)]));

  const nodeHello = await bench.startBaseline('node-http-hello.mjs', {});
  const expressHello = await bench.startBaseline('express-hello.mjs', {});
  const findOneServer = await bench.startBaseline('express-findone.mjs', {
    MONGO_URL: servers.mongo.adminUrl,
    MONGO_DB: services.databases['placement-service'],
    TENANT_ID: tenantId,
  });
  bench.accounted.clear();
  bench.accounted.set('load generator', process.pid);
  bench.accounted.set('mongodb server', servers.mongo.process?.pid);
  bench.accounted.set('bare findOne app', findOneServer.child.pid);
  bench.accounted.set('gateway', services.processes.gateway.pid);
  bench.accounted.set('placement-service', services.processes['placement-service'].pid);

  const results = {
    nodeHello: await bench.measure({ name: 'bare node:http hello', url: `${nodeHello.url}/` }),
    expressHello: await bench.measure({ name: 'bare Express hello', url: `${expressHello.url}/hello` }),
    gatewayTrivial: await bench.measure({ name: 'gateway GET /healthz', url: `${services.gatewayUrl}/healthz` }),
    gatewayAuthOnly: await bench.measure({
      name: 'gateway authenticated 404 (auth + rate limit, no upstream)',
      url: `${services.gatewayUrl}/api/v1/no-such-route`,
      headers: auth,
    }),
  };
  const bareFindOne = { name: 'bare Express + native findOne', url: `${findOneServer.url}/environments/prod` };
  const gatewayGet = { name: 'gateway GET /api/v1/environments/prod', url: `${services.gatewayUrl}/api/v1/environments/prod`, headers: auth };
  const [expressFindOne, gatewayGetEnv] = await bench.measurePair(bareFindOne, gatewayGet);
  // One connection: latency without queueing, which at saturation on 2 cores would
  // measure throughput (Little's law) rather than what the extra hop adds.
  const [expressFindOneSerial, gatewayGetEnvSerial] = await bench.measurePair(
    { ...bareFindOne, name: `${bareFindOne.name}, 1 connection` },
    { ...gatewayGet, name: `${gatewayGet.name}, 1 connection` },
    1,
  );
  // A scoped token limited to environments against the tenant's admin token, in the same run
  // (issue 41: at least 0.95x): the scope check and the name's match are all the gateway adds.
  const minted = await fetch(`${services.gatewayUrl}/api/v1/tokens`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench viewer', role: 'viewer', environments: ['prod', 'pr-*'] }),
  });
  if (minted.status !== 201) throw new Error(`minting the scoped token answered ${minted.status}`);
  const scopedToken = ((await minted.json()) as { data: { token: string } }).data.token;
  const [adminGetEnv, scopedGetEnv] = await bench.measurePair(
    { ...gatewayGet, name: `${gatewayGet.name}, admin token` },
    { ...gatewayGet, name: `${gatewayGet.name}, viewer token limited to prod and pr-*`, headers: { authorization: `Bearer ${scopedToken}` } },
  );
  const scopedRatio = scopedGetEnv.rps / adminGetEnv.rps;

  // Request metrics on against off in the same run: the same gateway restarted with
  // HTTP_METRICS=off and back, rounds interleaved (docs/design.md#operating-it: unused
  // observability costs nothing). Tracing stays off (no OTEL_EXPORTER_OTLP_ENDPOINT) in both:
  // what an operator who turned nothing on pays. The order alternates per round so that drift
  // weighs on both.
  const metricsOn: number[] = [];
  const metricsOff: number[] = [];
  const gatewayCpuOn: number[] = [];
  const gatewayCpuOff: number[] = [];
  for (let round = 1; round <= rounds; round += 1) {
    for (const setting of round % 2 === 1 ? (['off', 'on'] as const) : (['on', 'off'] as const)) {
      await services.restart('gateway', { HTTP_METRICS: setting });
      bench.accounted.set('gateway', services.processes.gateway.pid);
      const measured = await bench.measure({ ...gatewayGet, name: `${gatewayGet.name}, request metrics ${setting} (round ${round})` });
      (setting === 'on' ? metricsOn : metricsOff).push(measured.rps);
      (setting === 'on' ? gatewayCpuOn : gatewayCpuOff).push(measured.cpuMsPerRequest['gateway']!);
    }
  }
  const metricsRatio = median(metricsOn) / median(metricsOff);
  const gatewayCpuRatio = median(gatewayCpuOff) / median(gatewayCpuOn);
  const afterLoad = Object.fromEntries(Object.entries(services.processes).map(([name, child]) => [name, rssMegabytes(child.pid)]));

  return [
    '### Gateway',
    '',
    ...RESULT_HEADER,
    resultRow(results.nodeHello),
    resultRow(results.expressHello, results.nodeHello),
    resultRow(results.gatewayTrivial, results.expressHello),
    resultRow(results.gatewayAuthOnly, results.expressHello),
    resultRow(expressFindOne),
    resultRow(gatewayGetEnv, expressFindOne),
    resultRow(expressFindOneSerial),
    resultRow(gatewayGetEnvSerial, expressFindOneSerial),
    resultRow(adminGetEnv),
    resultRow(scopedGetEnv, adminGetEnv),
    '',
    `A scoped token limited to environments (a viewer of prod and pr-*) against the admin token, GET /environments/prod at ${connections} connections: ${scopedGetEnv.rps.toFixed(0)} against ${adminGetEnv.rps.toFixed(0)} requests/s, ${scopedRatio.toFixed(3)}x (target ≥ 0.95x: ${scopedRatio >= 0.95 ? 'met' : 'missed'}); the scoped token against the bare findOne: ${(scopedGetEnv.rps / expressFindOne.rps).toFixed(2)}x (target ≥ 0.5x: ${scopedGetEnv.rps / expressFindOne.rps >= 0.5 ? 'met' : 'missed'}).`,
    '',
    `Rows from the bare findOne down are medians of ${rounds} interleaved rounds. GET /environments/:name through the gateway adds ${(gatewayGetEnvSerial.p99 - expressFindOneSerial.p99).toFixed(0)} ms to the bare findOne p99 on one connection (p50: +${(gatewayGetEnvSerial.p50 - expressFindOneSerial.p50).toFixed(0)} ms), and ${(gatewayGetEnv.p99 - expressFindOne.p99).toFixed(0)} ms at ${connections} connections, where both are saturated.`,
    "(the authenticated 404 answers 404 by design; it measures the gateway's own pipeline)",
    '',
    `Request metrics (the HTTP histogram on every request, \`/metrics\` served): GET /environments/:name at ${connections} connections, ${median(metricsOn).toFixed(0)} requests/s with them on against ${median(metricsOff).toFixed(0)} off (medians of ${rounds} interleaved rounds: ${metricsOn.map((value) => value.toFixed(0)).join(', ')} against ${metricsOff.map((value) => value.toFixed(0)).join(', ')}): ${metricsRatio.toFixed(3)}x (target ≥ 0.95x: ${metricsRatio >= 0.95 ? 'met' : 'missed'}). The gateway's own CPU per request, the cost the metrics add where they run: ${median(gatewayCpuOn).toFixed(3)} ms on against ${median(gatewayCpuOff).toFixed(3)} ms off (${gatewayCpuOn.map((value) => value.toFixed(3)).join(', ')} against ${gatewayCpuOff.map((value) => value.toFixed(3)).join(', ')}), ${gatewayCpuRatio.toFixed(3)}x the requests per CPU second. Tracing off in both (no OTEL_EXPORTER_OTLP_ENDPOINT): no tracing middleware is mounted.`,
    '',
    `CPU milliseconds per request by process, at ${connections} connections (where the 2 cores go):`,
    '',
    ...cpuTable(bench.accounted, [expressFindOne, gatewayGetEnv]),
    '',
    '| service | RSS idle MB | RSS after load MB |',
    '|---|---:|---:|',
    ...Object.keys(idle).map((name) => `| ${name} | ${idle[name]!.toFixed(0)} | ${afterLoad[name]!.toFixed(0)} |`),
  ];
}
