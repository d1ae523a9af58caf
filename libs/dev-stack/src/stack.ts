import { chmodSync, mkdirSync } from 'node:fs';
import { bubblewrapBinary } from '@envengine/backing-servers';
import { startBackingServers, type BackingServerOptions, type BackingServers } from './backing.ts';
import { startServiceProcesses, type RunningServices } from './service-processes.ts';

export interface StackOptions extends BackingServerOptions {
  /** Prefix of every service database, so that stacks can share one server. */
  databasePrefix?: string;
  logLevel?: string;
  /** Extra environment for every service. */
  env?: Record<string, string>;
}

export interface RunningStack {
  servers: BackingServers;
  services: RunningServices;
  /** Services first (the gateway before the rest), then the servers. */
  stop(): Promise<void>;
}

/** The backing servers, then every service wired to them: what `npm start`, tests and benchmarks run. */
export async function startStack(options: StackOptions): Promise<RunningStack> {
  // The engine's runner refuses to run tenants' code without its OS sandbox unless told SANDBOX=off.
  if ((options.env?.['SANDBOX'] ?? process.env.SANDBOX) !== 'off') bubblewrapBinary(options.report);
  // The runners' sandboxes run as an unprivileged user, who must reach the bundle caches in
  // the data directory (a temporary one is made 0700); its files keep their own modes.
  mkdirSync(options.dataDir, { recursive: true });
  chmodSync(options.dataDir, 0o755);
  const servers = await startBackingServers(options);
  let services: RunningServices;
  try {
    services = await startServiceProcesses({
      dataDir: options.dataDir,
      ports: options.ports,
      mongoUrl: servers.mongo.url,
      redisUrl: servers.redis.url,
      temporalAddress: servers.temporal.url,
      databasePrefix: options.databasePrefix,
      logLevel: options.logLevel,
      env: options.env,
    });
  } catch (error) {
    await servers.stop();
    throw error;
  }
  return {
    servers,
    services,
    stop: async () => {
      await services.stop();
      await servers.stop();
    },
  };
}
