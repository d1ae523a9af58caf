import { escapeControlCharacters } from '@envengine/terminal-text';
import { CancelRunRequest, CreateRunRequest, MAX_TIMEOUT_SECONDS, PublicApi, RunListQuery, TERMINAL_RUN_STATUSES, type Attempt, type Run, type RunLogLine } from '@envengine/contracts';
import type { ApiClient } from '../api-client.ts';
import { flagOption, integerOption, listOption, requiredOption, stringOption, type CommandSpec, type OptionValues } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { CliError, ExitCode, usageError, type ExitCode as ExitCodeValue } from '../exit-codes.ts';
import { textWithLineBreaks, type Output } from '../output.ts';
import { StatusLine } from '../status-line.ts';
import { ENV_OPTION, requestBody } from './request-body.ts';

const POLL_MS = 500;
const LOG_PAGE = 1000;
const TERMINAL = new Set<string>(TERMINAL_RUN_STATUSES);

const WAIT_OPTION = { timeout: { type: 'string', value: 'SECONDS', description: 'stop waiting after SECONDS (exit 6, the run goes on); default: until it ends' } } as const;

function waitLimitMs(values: OptionValues): number | undefined {
  const seconds = integerOption(values, 'timeout', { min: 1, max: 7 * 86_400 });
  return seconds === undefined ? undefined : seconds * 1000;
}

async function getRun(api: ApiClient, id: string): Promise<Run> {
  return (await api.request(PublicApi.getRun, { params: { id } })).data;
}

/** Every log line after `cursor`, a page at a time. */
async function logsAfter(api: ApiClient, id: string, cursor: string | undefined): Promise<RunLogLine[]> {
  const lines: RunLogLine[] = [];
  for (;;) {
    const { data } = await api.request(PublicApi.getRunLogs, { params: { id }, query: { limit: LOG_PAGE, after: cursor } });
    lines.push(...data);
    if (data.length < LOG_PAGE) return lines;
    cursor = data[data.length - 1]!.cursor;
  }
}

function logText(out: Output, line: RunLogLine): string {
  return `${out.paint(line.at.slice(11, 23), 'dim')} ${out.paint(`#${line.attempt}`, 'dim')} ${escapeControlCharacters(line.asset ?? '-')}: ${textWithLineBreaks(line.message)}`;
}

/** Why a queued run has not started, when the engine knows: no live worker, or the environment's run limit. */
export function waitingReason(run: Run): string | null {
  if (run.status !== 'queued') return null;
  if (run.waiting_for_slot) return 'waiting for a slot (the environment\'s max_concurrent_runs)';
  if (run.waiting_for_worker) return 'waiting for a worker of the pool';
  return null;
}

function elapsedOf(run: Run, now: number): string {
  const from = Date.parse(run.started_at ?? run.inserted_at);
  const to = run.finished_at ? Date.parse(run.finished_at) : now;
  return `${(Math.max(0, to - from) / 1000).toFixed(1)}s`;
}

function currentAttempt(run: Run): Attempt | undefined {
  return run.attempts[run.attempts.length - 1];
}

/** The live status line of `runs watch`: attempt, executor, asset in progress, elapsed. */
export function describeRun(run: Run, now: number): string {
  const attempt = currentAttempt(run);
  const parts = [`${run.id} ${run.status}`];
  if (attempt) {
    parts.push(`attempt ${attempt.number}/${run.max_attempts} on ${attempt.executor}${attempt.worker ? ` (${attempt.worker})` : ''}`);
    const running = attempt.assets.find((asset) => asset.status === 'running');
    const done = attempt.assets.filter((asset) => asset.status === 'succeeded').length;
    if (running) parts.push(`asset ${running.key} (${done}/${attempt.assets.length} done)`);
  }
  const waiting = waitingReason(run);
  if (waiting) parts.push(waiting);
  parts.push(elapsedOf(run, now));
  return parts.join(' · ');
}

/**
 * An error in a table's cell: its first line (a stack's frames do not fit a cell), or
 * `(above)` when it is part of the run's error, which the summary prints once, in full,
 * above the tables (or the watched log printed it).
 */
function errorCell(run: Run, error: string | null): string | null {
  if (error === null) return null;
  if (run.error !== null && run.error.includes(error)) return '(above)';
  return firstLine(error);
}

function firstLine(text: string): string {
  const end = text.indexOf('\n');
  return end === -1 ? text : `${text.slice(0, end)} …`;
}

function attemptsTable(out: Output, run: Run): string {
  return out.table(
    ['ATTEMPT', 'EXECUTOR', 'STATUS', 'WORKER', 'ERROR'],
    run.attempts.map((attempt) => [attempt.number, attempt.executor, { text: attempt.status, color: statusColorOf(attempt.status) }, attempt.worker, errorCell(run, attempt.error)]),
  );
}

function assetsTable(out: Output, run: Run): string {
  const rows = run.attempts.flatMap((attempt) =>
    attempt.assets.map((asset) => [attempt.number, asset.key, { text: asset.status, color: statusColorOf(asset.status) }, asset.materialization_id, errorCell(run, asset.error)] as const),
  );
  return out.table(['ATTEMPT', 'ASSET', 'STATUS', 'MATERIALIZATION', 'ERROR'], rows);
}

/** The failed asset of the run's last attempt, whose error ends the run's. */
function failedAsset(run: Run): { key: string; error: string } | undefined {
  const asset = currentAttempt(run)?.assets.find((entry) => entry.status === 'failed' && entry.error !== null);
  return asset ? { key: asset.key, error: asset.error! } : undefined;
}

function statusColorOf(status: string) {
  return status === 'succeeded' ? ('green' as const) : ['failed', 'lost', 'canceled'].includes(status) ? ('red' as const) : ('yellow' as const);
}

/**
 * `errorInLog`: the watched log already printed the failed asset's error in full (the
 * worker's `asset K failed: …` line); the summary then names the asset without printing
 * the error a second time.
 */
function runSummary(out: Output, run: Run, now: number, errorInLog = false): string {
  const what = run.job ? `job ${run.job}` : `assets ${run.assets.join(', ')}`;
  const failed = failedAsset(run);
  const error = run.error === null ? null : errorInLog && failed && run.error.endsWith(failed.error) ? `${run.error.slice(0, -failed.error.length).replace(/: $/, '')} failed (its error is in the log above)` : run.error;
  return [
    `Run ${out.paint(run.id, 'bold')} ${out.status(run.status)} after ${elapsedOf(run, now)}${waitingReason(run) ? `, ${waitingReason(run)}` : ''} (${what}, deployment ${run.deployment_id}, ${run.trigger}).`,
    ...(error ? [`Error: ${textWithLineBreaks(error)}`] : []),
    '',
    attemptsTable(out, run),
    '',
    assetsTable(out, run),
  ].join('\n');
}

function exitOf(ctx: CommandContext, run: Run): ExitCodeValue {
  if (run.status === 'succeeded') return ExitCode.ok;
  // A table printed the error just above; JSON has it in the run: the line gives its first line only.
  const why = run.error === null ? '' : ctx.out.json ? `: ${firstLine(run.error)}` : ' (its error is above)';
  ctx.out.error(`run_${run.status}`, `run ${run.id} ${run.status}${why}`);
  return ExitCode.failed;
}

/**
 * Follows a run to its end: its log lines as they come (NDJSON `{"log": line}` in json
 * mode), a live status line on stderr, then the result (`{"run": run}`). Exit 0 when it
 * succeeded, 1 when it failed or was canceled, 6 when `timeoutMs` ran out first.
 */
export async function watchRun(ctx: CommandContext, api: ApiClient, id: string, timeoutMs: number | undefined): Promise<ExitCodeValue> {
  const deadline = timeoutMs === undefined ? Infinity : ctx.now() + timeoutMs;
  const status = new StatusLine(ctx.out);
  // Ctrl-C stops the watching, not the run: end the status line and say so (exit 130).
  let interrupt: (error: CliError) => void = () => undefined;
  const interrupted = new Promise<never>((_, reject) => (interrupt = reject));
  interrupted.catch(() => undefined);
  const unhook = ctx.onInterrupt(() => {
    status.done();
    interrupt(new CliError(ExitCode.interrupted, 'interrupted', `stopped watching; run ${id} goes on (envctl runs watch ${id} follows it again)`));
  });
  const orInterrupt = <T>(step: Promise<T>): Promise<T> => Promise.race([step, interrupted]);
  let cursor: string | undefined;
  // The worker's own `asset K failed: …` lines (one log line per line of the error: its
  // frames follow), so that the summary need not print the same error again.
  const failureLines = new Set<string>();
  const printLogs = (lines: readonly RunLogLine[]) => {
    if (lines.length === 0) return;
    status.clear();
    for (const line of lines) {
      ctx.out.line({ log: line }, () => logText(ctx.out, line));
      if (!ctx.out.json && line.asset !== null && line.message.startsWith(`asset ${line.asset} failed: `)) failureLines.add(`${line.asset}\u0000${line.message}`);
    }
    cursor = lines[lines.length - 1]!.cursor;
  };
  const errorInLog = (run: Run) => {
    const failed = failedAsset(run);
    return failed !== undefined && failureLines.has(`${failed.key}\u0000asset ${failed.key} failed: ${failed.error.split('\n')[0]}`);
  };
  try {
    for (;;) {
      const run = await orInterrupt(getRun(api, id));
      printLogs(await orInterrupt(logsAfter(api, id, cursor)));
      if (TERMINAL.has(run.status)) {
        // Lines shipped just before the finish report.
        printLogs(await logsAfter(api, id, cursor));
        status.done();
        ctx.out.line({ run }, () => `\n${runSummary(ctx.out, run, ctx.now(), errorInLog(run))}`);
        return exitOf(ctx, run);
      }
      status.update(describeRun(run, ctx.now()));
      if (ctx.now() >= deadline) {
        status.done();
        throw new CliError(ExitCode.timedOut, 'timed_out', `run ${id} was still ${run.status} after ${timeoutMs! / 1000} s (it goes on; envctl runs watch ${id} follows it again)`);
      }
      await orInterrupt(ctx.sleep(POLL_MS));
    }
  } finally {
    unhook();
    status.done();
  }
}

export const runCommands: CommandSpec[] = [
  {
    path: ['runs', 'start'],
    summary: "start a run of a job or of assets on the environment's active deployment",
    options: {
      ...ENV_OPTION,
      job: { type: 'string', value: 'NAME', description: 'the job to run' },
      asset: { type: 'string', multiple: true, value: 'KEY', description: 'an asset to run (instead of --job)' },
      'max-attempts': { type: 'string', value: 'N', description: 'attempts allowed (1-10, default 1)' },
      'time-limit': { type: 'string', value: 'S', description: `the run's time limit in seconds from its start (timeout_seconds, 1-${MAX_TIMEOUT_SECONDS})` },
      watch: { type: 'boolean', description: 'follow it to its end, as runs watch does' },
      ...WAIT_OPTION,
    },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'runs start');
      const job = stringOption(values, 'job');
      const assets = listOption(values, 'asset');
      if ((job === undefined) === (assets.length === 0)) throw usageError('give --job NAME or --asset KEY (one of them)');
      const maxAttempts = integerOption(values, 'max-attempts', { min: 1, max: 10 });
      const timeLimit = integerOption(values, 'time-limit', { min: 1, max: MAX_TIMEOUT_SECONDS });
      const body = requestBody(CreateRunRequest, {
        ...(job ? { job } : { assets }),
        ...(maxAttempts ? { max_attempts: maxAttempts } : {}),
        ...(timeLimit ? { timeout_seconds: timeLimit } : {}),
      });
      const api = await ctx.api();
      const { data } = await api.request(PublicApi.createRun, { params: { name: env }, body }, { idempotent: true });
      // A remote environment with no live worker: the run waits, and the user should know why now.
      if (data.waiting_for_worker) ctx.out.warn(`no worker of your pool is live: run ${data.id} waits until one starts (envctl worker start, docs/cli.md)`);
      if (flagOption(values, 'watch')) {
        ctx.out.info(`Started run ${data.id}.`);
        return watchRun(ctx, api, data.id, waitLimitMs(values));
      }
      ctx.out.info(`Started run ${data.id}; follow it with: envctl runs watch ${data.id}`);
      ctx.out.data(data, () => data.id);
    },
  },
  {
    path: ['runs', 'list'],
    summary: "list an environment's runs, newest first",
    options: {
      ...ENV_OPTION,
      status: { type: 'string', value: 'STATUS', description: 'only runs in this status (queued, running, succeeded, failed, canceled)' },
      limit: { type: 'string', value: 'N', description: 'at most N (1-200, default 20)' },
    },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'runs list');
      const status = stringOption(values, 'status');
      const query = requestBody(RunListQuery, { limit: integerOption(values, 'limit', { min: 1, max: 200 }) ?? 20, ...(status ? { status } : {}) });
      const { data } = await (await ctx.api()).request(PublicApi.listRuns, { params: { name: env }, query });
      ctx.out.data(data, () =>
        ctx.out.table(
          ['ID', 'STATUS', 'JOB/ASSETS', 'ATTEMPTS', 'TRIGGER', 'CREATED', 'ERROR'],
          data.map((run) => [
            run.id,
            { text: waitingReason(run) ? `${run.status}, ${waitingReason(run)!.replace(/ \(.*\)$/, '')}` : run.status, color: statusColorOf(run.status) },
            run.job ?? run.assets.join(','),
            `${run.attempts.length}/${run.max_attempts}`,
            run.trigger,
            run.inserted_at,
            run.error,
          ]),
        ),
      );
    },
  },
  {
    path: ['runs', 'get'],
    summary: 'show one run with its attempts and assets',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const run = await getRun(await ctx.api(), positionals[0]!);
      ctx.out.data(run, () => runSummary(ctx.out, run, ctx.now()));
    },
  },
  {
    path: ['runs', 'watch'],
    summary: 'follow a run to its end: live status, its logs, then the result (exit 1 if it failed)',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    options: { ...WAIT_OPTION },
    async run(ctx, { values, positionals }) {
      return watchRun(ctx, await ctx.api(), positionals[0]!, waitLimitMs(values));
    },
  },
  {
    path: ['runs', 'logs'],
    summary: "print a run's log lines (NDJSON in json mode); --follow streams new ones until it ends",
    args: 'ID',
    positionals: { min: 1, max: 1 },
    options: { follow: { type: 'boolean', short: 'f', description: 'keep printing new lines until the run ends' }, ...WAIT_OPTION },
    async run(ctx, { values, positionals }) {
      const api = await ctx.api();
      const id = positionals[0]!;
      const follow = flagOption(values, 'follow');
      const limitMs = waitLimitMs(values);
      const deadline = limitMs === undefined ? Infinity : ctx.now() + limitMs;
      let cursor: string | undefined;
      for (;;) {
        // Read the status before the lines, so that the last read after the end gets every line.
        const finished = follow ? TERMINAL.has((await getRun(api, id)).status) : true;
        const lines = await logsAfter(api, id, cursor);
        for (const line of lines) ctx.out.line(line, () => logText(ctx.out, line));
        if (lines.length > 0) cursor = lines[lines.length - 1]!.cursor;
        if (finished) return;
        if (ctx.now() >= deadline) throw new CliError(ExitCode.timedOut, 'timed_out', `run ${id} was still going after ${limitMs! / 1000} s`);
        await ctx.sleep(POLL_MS);
      }
    },
  },
  {
    path: ['runs', 'cancel'],
    summary: 'cancel a run (its open attempt is stopped)',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.cancelRun, { params: { id: positionals[0]! }, body: requestBody(CancelRunRequest, {}) }, { idempotent: true });
      ctx.out.data(data, () => `Run ${data.id} is ${ctx.out.status(data.status)}.`);
    },
  },
];
