import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { aptInstall, findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePort, waitUntil } from './network.ts';

export interface StartPostgresOptions {
  dataDir: string;
  port?: number;
  /** The one role the cluster has (its superuser), and its password (SCRAM over TCP only). */
  user: string;
  password: string;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

export interface PostgresServer {
  host: string;
  port: number;
  user: string;
  process: ManagedProcess;
  /** PostgreSQL's own tools (`initdb`, `pg_isready`, …) live here. */
  binDir: string;
  stop(): Promise<void>;
}

/** Debian keeps PostgreSQL's server programs off PATH, under /usr/lib/postgresql/<major>/bin. */
function postgresBinDir(env: NodeJS.ProcessEnv): string | undefined {
  // Symbolic links on PATH (/usr/local/bin/initdb) are followed to the directory of the rest.
  const onPath = findOnPath('initdb', env);
  if (onPath) {
    const dir = dirname(realpathSync(onPath));
    if (['postgres', 'pg_isready'].every((name) => existsSync(join(dir, name)))) return dir;
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(root, majors[0], 'bin') : undefined;
}

/** The server's binaries, installed with apt (Debian's `postgresql`) when missing and the process may. */
export function postgresBinaries(report: Reporter, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return postgresBinDir(env) ?? (aptInstall('postgresql', report, env) ? postgresBinDir(env) : undefined);
}

/**
 * PostgreSQL refuses to run as root: as root it runs as the `postgres` user the Debian
 * package makes (else `nobody`), owning its data directory.
 */
function serverAccount(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const group = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (id.status === 0 && group.status === 0) return { uid: Number(id.stdout.trim()), gid: Number(group.stdout.trim()) };
  }
  throw new Error('PostgreSQL cannot run as root and neither a "postgres" nor a "nobody" user exists');
}

/**
 * A PostgreSQL cluster in `<dataDir>/postgres`, made with `initdb` at the first start: TCP on
 * 127.0.0.1 only, every connection authenticated with SCRAM (local socket too), one
 * superuser role. `synchronous_commit=off`: a machine crash may lose the last commits
 * (never corrupt), the durability of the embedded profile's SQLite in WAL mode with
 * `synchronous=normal`, so the two profiles are compared on the same terms.
 */
export async function startPostgres(options: StartPostgresOptions): Promise<PostgresServer> {
  const env = options.env ?? process.env;
  const binDir = postgresBinaries(options.report, env);
  if (!binDir) {
    throw new ServerUnavailableError('PostgreSQL', 'Install it: sudo apt-get install postgresql (its server programs are then under /usr/lib/postgresql/<version>/bin).');
  }
  const account = serverAccount();
  const root = join(options.dataDir, 'postgres');
  const data = join(root, 'data');
  const socketDir = join(root, 'socket');
  mkdirSync(socketDir, { recursive: true, mode: 0o700 });
  const own = (path: string) => account && chownSync(path, account.uid, account.gid);
  own(root);
  own(socketDir);
  if (!existsSync(join(data, 'PG_VERSION'))) {
    rmSync(data, { recursive: true, force: true });
    const passwordFile = join(root, 'initdb-password');
    writeFileSync(passwordFile, `${options.password}\n`, { mode: 0o600 });
    own(passwordFile);
    try {
      const init = spawnSync(
        join(binDir, 'initdb'),
        ['-D', data, '-U', options.user, '--pwfile', passwordFile, '--auth', 'scram-sha-256', '-E', 'UTF8', '--locale', 'C'],
        { cwd: root, env: { ...env, LC_ALL: 'C' }, encoding: 'utf8', ...account },
      );
      if (init.status !== 0) throw new Error(`initdb failed (exit ${init.status}): ${init.stderr}`);
    } finally {
      rmSync(passwordFile, { force: true });
    }
  }
  const port = options.port ?? (await freePort());
  const logFile = join(options.dataDir, 'logs', 'postgres.log');
  const settings = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: socketDir,
    max_connections: '300',
    synchronous_commit: 'off',
  };
  const process_ = new ManagedProcess({
    name: 'postgres',
    command: join(binDir, 'postgres'),
    args: ['-D', data, ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
    logFile,
    cwd: root,
    env: { ...env, LC_ALL: 'C' },
    ...account,
  });
  const ready = async () => spawnSync(join(binDir, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port)]).status === 0;
  try {
    await waitUntil('postgres', ready, { timeoutMs: 60_000, alive: () => process_.running, logFile });
  } catch (error) {
    await process_.stop();
    throw error;
  }
  return { host: '127.0.0.1', port, user: options.user, process: process_, binDir, stop: () => process_.stop() };
}
