import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { binaryCacheRoot, ensureGoBuild, findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePort, waitUntil } from './network.ts';

export interface StartMongoOptions {
  /** Use this server instead of starting one (MONGO_URL). */
  url?: string;
  /** Where the embedded server keeps its data and logs. */
  dataDir: string;
  /** Port to listen on; a free one when omitted. */
  port?: number;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

async function mongoAnswers(url: string): Promise<boolean> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
  try {
    await client.connect();
    await client.db('admin').command({ ping: 1 });
    return true;
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** A MongoDB-wire server: MONGO_URL, then `mongod` on PATH, then FerretDB (SQLite) built with Go. */
export async function startMongo(options: StartMongoOptions): Promise<BackingServer> {
  const env = options.env ?? process.env;
  if (options.url) {
    await waitUntil('MongoDB at MONGO_URL', () => mongoAnswers(options.url!), { timeoutMs: 15_000 });
    return { name: 'mongodb', url: options.url, source: 'url', links: {}, stop: async () => undefined };
  }
  const port = options.port ?? (await freePort());
  const url = `mongodb://127.0.0.1:${port}/`;
  const logFile = join(options.dataDir, 'logs', 'mongodb.log');

  const mongod = findOnPath('mongod', env);
  let process_: ManagedProcess;
  let source: BackingServer['source'];
  if (mongod) {
    const dbPath = join(options.dataDir, 'mongod');
    mkdirSync(dbPath, { recursive: true });
    process_ = new ManagedProcess({
      name: 'mongod',
      command: mongod,
      args: ['--dbpath', dbPath, '--port', String(port), '--bind_ip', '127.0.0.1', '--quiet'],
      logFile,
    });
    source = 'path';
  } else {
    const ferretdb = findOnPath('ferretdb', env) ?? (await ensureGoBuild('ferretdb', options.report, env));
    if (!ferretdb) {
      throw new ServerUnavailableError(
        'MongoDB-wire server',
        `Set MONGO_URL to a running MongoDB, put mongod or ferretdb on PATH, or install Go (apt-get install golang-go) so that FerretDB v1.24.2 can be built into ${binaryCacheRoot(env)}.`,
      );
    }
    const sqliteDir = join(options.dataDir, 'ferretdb');
    mkdirSync(sqliteDir, { recursive: true });
    process_ = new ManagedProcess({
      name: 'ferretdb',
      command: ferretdb,
      args: [
        `--listen-addr=127.0.0.1:${port}`,
        '--handler=sqlite',
        `--sqlite-url=file:${sqliteDir}/`,
        `--state-dir=${sqliteDir}`,
        '--debug-addr=-',
        '--telemetry=disable',
        '--log-level=warn',
      ],
      logFile,
    });
    source = findOnPath('ferretdb', env) ? 'path' : 'go-build';
  }
  await waitUntil(process_.name, () => mongoAnswers(url), {
    timeoutMs: 30_000,
    alive: () => process_.running,
    logFile,
  });
  return { name: 'mongodb', url, source, process: process_, links: {}, stop: () => process_.stop() };
}
