import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { PoolCredentialIssued, WORKER_EXIT_CODES } from '@envengine/contracts';
import { integerOption, stringOption, type CommandSpec } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';
import { readStdin } from '../prompts.ts';

/** The installable worker built beside envctl (dist/worker-package/envengine-worker/envengine-worker.mjs): what a pool host runs. */
const BUILT_WORKER = fileURLToPath(new URL('../../worker-package/envengine-worker/envengine-worker.mjs', import.meta.url));

async function credentialOf(ctx: CommandContext, file: string | undefined): Promise<PoolCredentialIssued> {
  let text: string;
  if (file !== undefined) {
    text = await readFile(file, 'utf8').catch((error: Error) => {
      throw usageError(`cannot read --credentials ${file}: ${error.message}`);
    });
  } else if (!ctx.io.stdin.isTTY) {
    text = (await readStdin(ctx.io)).toString('utf8');
  } else {
    throw usageError('give --credentials FILE (from envctl pool credentials create --save FILE), or pipe the credential JSON on stdin');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw usageError('the credential is not JSON (expected the output of envctl pool credentials create --save FILE)');
  }
  const parsed = PoolCredentialIssued.safeParse(json);
  if (!parsed.success) throw usageError(`the credential lacks ${parsed.error.issues.map((issue) => issue.path.join('.')).join(', ')}`);
  return parsed.data;
}

export const workerCommand: CommandSpec = {
  path: ['worker', 'start'],
  summary: 'run an attempt-worker of your pool here, with a pool credential (passed to it through its environment, never its arguments)',
  options: {
    credentials: { type: 'string', value: 'FILE', description: 'the credential file (envctl pool credentials create --save FILE); else stdin' },
    'redis-url': { type: 'string', value: 'URL', description: "the engine's Redis, to override the one the credential names (else ENVCTL_REDIS_URL)" },
    name: { type: 'string', value: 'NAME', description: 'the worker name shown by pool status (default host-pid)' },
    concurrency: { type: 'string', value: 'N', description: 'attempts at once (default 4)' },
  },
  async run(ctx, { values }) {
    const settings = await ctx.settings();
    const credential = await credentialOf(ctx, stringOption(values, 'credentials'));
    // The credential names the Redis the engine advertises; a flag or the environment overrides it.
    const redisUrl = stringOption(values, 'redis-url') ?? ctx.env.redisUrl ?? credential.redis.url ?? undefined;
    if (!redisUrl) throw usageError("this credential names no Redis (it predates PUBLIC_REDIS_URL): give --redis-url URL or ENVCTL_REDIS_URL");
    const program = ctx.env.workerBin ?? BUILT_WORKER;
    if (!existsSync(program)) throw new CliError(ExitCode.usage, 'worker_missing', `no worker at ${program}; build it (npx nx run attempt-worker:build) or set ENVCTL_WORKER_BIN`);
    const concurrency = integerOption(values, 'concurrency', { min: 1, max: 256 });
    const name = stringOption(values, 'name');
    const env: Record<string, string> = {
      ...ctx.env.inherited,
      API_URL: settings.url,
      REDIS_URL: redisUrl,
      POOL_TOKEN: credential.token,
      REDIS_USERNAME: credential.redis.username,
      REDIS_PASSWORD: credential.redis.password,
      POOL_QUEUE: credential.queue,
      ...(name ? { WORKER_NAME: name } : {}),
      ...(concurrency ? { CONCURRENCY: String(concurrency) } : {}),
    };
    ctx.out.info(`Starting a worker of pool ${credential.queue} (credential ${credential.id}) against ${settings.url}; Ctrl-C drains it.`);
    // Its own process group, so that it hears a Ctrl-C once, from here: the terminal's goes
    // to this group only. npm forwards the terminal's signal to its script, which had it
    // already, so the same signal twice within REPEAT_MS is one (else one Ctrl-C would be
    // the worker's "second Ctrl-C", which stops at once).
    const child = spawn(process.execPath, ['--enable-source-maps', program, '--pool'], { env, stdio: ['ignore', 'inherit', 'inherit'], detached: true });
    const stopWithMe = () => child.kill('SIGTERM');
    process.once('exit', stopWithMe);
    const forward = signalForwarder((signal) => child.kill(signal));
    const onInt = () => forward('SIGINT');
    const onTerm = () => forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    try {
      const code = await new Promise<number>((resolve, reject) => {
        child.once('error', reject);
        child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal === 'SIGTERM' || signal === 'SIGINT' ? 0 : 1)));
      });
      if (code === WORKER_EXIT_CODES.configuration) {
        throw new CliError(ExitCode.usage, 'worker_cannot_start', 'the worker cannot start here: it said why above (a setting, Node.js 26 or 24, or the OS sandbox)');
      }
      if (code === WORKER_EXIT_CODES.credentialRefused) {
        throw new CliError(ExitCode.auth, 'credential_refused', `the engine refused the pool credential ${credential.id} (revoked?): create a new one with envctl pool credentials create`);
      }
      return code === 0 ? ExitCode.ok : ExitCode.failed;
    } finally {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      process.off('exit', stopWithMe);
    }
  },
};

/** A repeat of the same signal this soon is the same Ctrl-C delivered twice (by the terminal and by npm). */
export const REPEAT_MS = 250;

/** Calls `send` for each signal, but once for the same signal twice within REPEAT_MS. */
export function signalForwarder(send: (signal: NodeJS.Signals) => void, now: () => number = Date.now): (signal: NodeJS.Signals) => void {
  let last: { signal: NodeJS.Signals; at: number } | undefined;
  return (signal) => {
    const at = now();
    if (last && last.signal === signal && at - last.at < REPEAT_MS) return;
    last = { signal, at };
    send(signal);
  };
}
