import { ensureGoBuild, type Reporter } from './binaries.ts';
import { mongodBinary } from './mongo-server.ts';
import { redisServerBinary } from './redis-server.ts';
import { bubblewrapBinary } from './sandbox-tools.ts';
import { promtoolBinary } from './prometheus-tools.ts';
import { ensureSchemathesis } from './schemathesis-tool.ts';
import { ensureOpenApiPythonClient } from './openapi-python-client-tool.ts';
import { temporalBinary } from './temporal-server.ts';
import { weedBinary } from './object-store-server.ts';
import { postgresBinaries } from './postgres-server.ts';

export interface InstalledServers {
  mongod: string | undefined;
  redisServer: string | undefined;
  temporal: string | undefined;
  /** The cluster profile's Temporal server and its PostgreSQL (the suite's cluster test starts them). */
  temporalServer: string | undefined;
  postgres: string | undefined;
  /** SeaweedFS, the embedded S3-compatible store. */
  weed: string | undefined;
  /** The OS sandbox of the engine's runner (not a server, but obtained the same way). */
  bubblewrap: string | undefined;
  /** What checks deploy/prometheus in the tests (a tool, obtained the same way). */
  promtool: string | undefined;
  /** The OpenAPI fuzzer the suite runs against the gateway (its packages' directory). */
  schemathesis: string | undefined;
  /** The Python client generator the suite checks the document with (its packages' directory). */
  openapiPythonClient: string | undefined;
}

/**
 * Obtains the binaries of the backing servers ahead of their first start, by the same lookup
 * their start uses (docs/design.md#running-it), so that tests which start a server of their
 * own (a lib's Redis test, say) find it on a fresh machine too. Nothing is installed for a
 * server given by URL; undefined where nothing could be had (its start then says why).
 */
export async function installServerBinaries(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<InstalledServers> {
  return {
    redisServer: env.REDIS_URL ? undefined : redisServerBinary(report, env)?.path,
    mongod: env.MONGO_URL ? undefined : (await mongodBinary(report, env))?.path,
    temporal: env.TEMPORAL_ADDRESS ? undefined : (await temporalBinary(report, env))?.path,
    temporalServer: env.TEMPORAL_ADDRESS ? undefined : await ensureGoBuild('temporal-server', report, env),
    postgres: env.TEMPORAL_ADDRESS ? undefined : postgresBinaries(report, env),
    weed: env.S3_URL ? undefined : (await weedBinary(report, env))?.path,
    bubblewrap: env.SANDBOX === 'off' ? undefined : bubblewrapBinary(report, env),
    promtool: promtoolBinary(report, env),
    schemathesis: (await ensureSchemathesis(report, env))?.pythonPath,
    openapiPythonClient: (await ensureOpenApiPythonClient(report, env))?.pythonPath,
  };
}
