import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, basename } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { PREVIEW_MAX_ROWS, PublicApi } from '@envengine/contracts';
import { IGNORE_FILE } from '@envengine/bundle-packing';
import { integerOption, requiredOption, stringOption, type CommandSpec, type OptionSpec } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { formatBytes, statusColor } from '../output.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { ENV_OPTION } from './request-body.ts';

const MATERIALIZATION_OPTION: Record<string, OptionSpec> = {
  materialization: { type: 'string', short: 'm', value: 'ID', description: 'a materialization id (default: the newest)' },
};

/** The materialization asked for, or the asset's newest one. */
async function chosenMaterialization(ctx: CommandContext, env: string, key: string, id: string | undefined): Promise<string> {
  if (id !== undefined) return id;
  const { data } = await (await ctx.api()).request(PublicApi.listMaterializations, { params: { name: env, key }, query: { limit: 1 } });
  if (data.length === 0) throw new CliError(ExitCode.notFound, 'not_found', `Asset "${key}" of ${env} has no materialization yet; run it first (envctl runs start --env ${env} --asset ${key}).`);
  return data[0]!.id;
}

/** A cell of a preview as text: JSON values (objects, arrays) as JSON. */
function cellOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
function csvField(value: unknown): string {
  const text = cellOf(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * Where a download goes without `-o`: the current folder, unless that is a project folder
 * (a manifest or an ignore file in it), whose next pack would take the file along; there,
 * `.envctl/downloads/`, which packing always leaves out (libs/bundle-packing DEFAULT_IGNORES).
 */
async function defaultDownloadPath(fileName: string): Promise<string> {
  const markers = await Promise.all(['manifest.json', IGNORE_FILE].map((name) => stat(name).then(() => true, () => false)));
  if (!markers.some(Boolean)) return fileName;
  const folder = join('.envctl', 'downloads');
  await mkdir(folder, { recursive: true });
  return join(folder, fileName);
}

export const assetCommands: CommandSpec[] = [
  {
    path: ['assets', 'list'],
    summary: "an environment's assets (its active deployment's), each with its latest materialization",
    options: { ...ENV_OPTION },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'assets list');
      const { data } = await (await ctx.api()).request(PublicApi.listAssets, { params: { name: env } });
      ctx.out.data(data, () =>
        ctx.out.table(
          ['KEY', 'BINDING', 'STATUS', 'ROWS', 'SIZE', 'LATEST', 'WRITTEN'],
          data.map((asset) => [
            asset.key,
            asset.binding,
            asset.status === null ? 'never run' : { text: asset.status, color: statusColor(asset.status) },
            asset.latest_materialization?.row_count ?? '-',
            asset.latest_materialization?.bytes == null ? '-' : formatBytes(asset.latest_materialization.bytes),
            asset.latest_materialization?.id ?? '-',
            asset.latest_materialization?.inserted_at ?? '-',
          ]),
        ),
      );
    },
  },
  {
    path: ['assets', 'show'],
    summary: "an asset's materializations, newest first: id, run, rows, size, status, where it is",
    args: 'KEY',
    positionals: { min: 1, max: 1 },
    options: {
      ...ENV_OPTION,
      limit: { type: 'string', short: 'n', value: 'N', description: 'how many (1-200, default 20)' },
      before: { type: 'string', value: 'ID', description: 'older than this materialization (the next page)' },
    },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', 'assets show');
      const limit = integerOption(values, 'limit', { min: 1, max: 200 }) ?? 20;
      const before = stringOption(values, 'before');
      const { data } = await (await ctx.api()).request(PublicApi.listMaterializations, { params: { name: env, key: positionals[0]! }, query: { limit, before } });
      ctx.out.data(data, () =>
        data.length === 0
          ? `Asset "${positionals[0]}" of ${env} has no materialization yet.`
          : ctx.out.table(
              ['ID', 'RUN', 'ROWS', 'SIZE', 'STATUS', 'WRITTEN', 'LOCATION'],
              data.map((materialization) => [
                materialization.id,
                materialization.run_id ?? '-',
                materialization.row_count,
                materialization.bytes === null ? '-' : formatBytes(materialization.bytes),
                { text: materialization.status, color: statusColor(materialization.status) },
                materialization.inserted_at,
                materialization.location ?? '-',
              ]),
            ),
      );
    },
  },
  {
    path: ['assets', 'download'],
    summary: "download a materialization's Parquet file (default: the newest, to ./<key>-<id>.parquet, or .envctl/downloads/ in a project folder)",
    args: 'KEY',
    positionals: { min: 1, max: 1 },
    options: { ...ENV_OPTION, ...MATERIALIZATION_OPTION },
    output: { value: 'FILE', description: 'where to write it (default ./<key>-<id>.parquet, or .envctl/downloads/<key>-<id>.parquet in a project folder); - for stdout' },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', 'assets download');
      const key = positionals[0]!;
      const id = await chosenMaterialization(ctx, env, key, stringOption(values, 'materialization'));
      const target = stringOption(values, 'output') ?? (await defaultDownloadPath(`${key.replace(/[^A-Za-z0-9._-]/g, '_')}-${id}.parquet`));
      const response = await (await ctx.api()).download(PublicApi.downloadMaterialization, { params: { name: env, key, id } });
      const body = Readable.fromWeb(response.body! as WebReadableStream<Uint8Array>);
      if (target === '-') {
        const stdout = ctx.out.io.stdout as unknown as NodeJS.WritableStream;
        await pipeline(body, new Writable({ write: (chunk, _encoding, done) => (stdout.write(chunk) ? done() : stdout.once('drain', () => done())) }));
        return;
      }
      // Written beside the target and renamed into place: an interrupted download leaves no half file under its name.
      const partial = join(dirname(target), `.${basename(target)}.${randomBytes(4).toString('hex')}.partial`);
      let bytes = 0;
      try {
        body.on('data', (chunk: Buffer) => (bytes += chunk.length));
        await pipeline(body, createWriteStream(partial, { flags: 'wx' }));
        await rename(partial, target);
      } catch (error) {
        await rm(partial, { force: true });
        if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'EACCES') {
          throw new CliError(ExitCode.failed, 'write_failed', `cannot write ${target}: ${(error as Error).message}`);
        }
        throw error;
      }
      ctx.out.info(`Wrote ${formatBytes(bytes)} (${bytes} bytes) of ${key} ${id} to ${target}.`);
    },
  },
  {
    path: ['assets', 'preview'],
    summary: "the first rows of a materialization (default: the newest), as a table, JSON or CSV",
    args: 'KEY',
    positionals: { min: 1, max: 1 },
    options: {
      ...ENV_OPTION,
      ...MATERIALIZATION_OPTION,
      limit: { type: 'string', short: 'n', value: 'N', description: `how many rows (1-${PREVIEW_MAX_ROWS}, default 20)` },
    },
    output: { value: 'table|json|csv', description: 'output format (default: table on a terminal, json when piped)', formats: ['table', 'json', 'csv'] },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', 'assets preview');
      const format = stringOption(values, 'output');
      const limit = integerOption(values, 'limit', { min: 1, max: PREVIEW_MAX_ROWS }) ?? 20;
      const key = positionals[0]!;
      const id = await chosenMaterialization(ctx, env, key, stringOption(values, 'materialization'));
      const { data } = await (await ctx.api()).request(PublicApi.previewMaterialization, { params: { name: env, key, id }, query: { limit } });
      const names = data.columns.map((column) => column.name);
      if (format === 'csv') {
        ctx.out.io.stdout.write([names.map(csvField).join(','), ...data.rows.map((row) => names.map((name) => csvField(row[name])).join(','))].join('\r\n') + '\r\n');
        return;
      }
      ctx.out.data(data, () =>
        [
          ctx.out.table(names, data.rows.map((row) => names.map((name) => cellOf(row[name])))),
          `${data.rows.length} of ${data.row_count} rows of ${key} ${data.materialization_id}${data.truncated ? ` (--limit to see more, up to ${PREVIEW_MAX_ROWS})` : ''}`,
        ].join('\n'),
      );
    },
  },
];
