import { chmod, writeFile } from 'node:fs/promises';
import { CreatePoolCredentialRequest, PublicApi } from '@envengine/contracts';
import { stringOption, type CommandSpec } from '../command-line.ts';
import { requestBody } from './request-body.ts';

export const poolCommands: CommandSpec[] = [
  {
    path: ['pool', 'credentials', 'create'],
    summary: "issue a credential set for a worker of your pool (shown once; --save writes it to a 0600 file instead)",
    options: {
      label: { type: 'string', value: 'TEXT', description: 'a label to tell credentials apart' },
      save: { type: 'string', value: 'FILE', description: 'write the credential to FILE (mode 0600) for envctl worker start, and print only its id' },
    },
    async run(ctx, { values }) {
      const label = stringOption(values, 'label');
      const body = requestBody(CreatePoolCredentialRequest, label === undefined ? {} : { label });
      const { data } = await (await ctx.api()).request(PublicApi.createPoolCredential, { body });
      const save = stringOption(values, 'save');
      if (save !== undefined) {
        await writeFile(save, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
        await chmod(save, 0o600);
        ctx.out.info(`Saved credential ${data.id} to ${save} (mode 0600); start a worker with: envctl worker start --credentials ${save}`);
        ctx.out.data({ id: data.id, queue: data.queue, created_at: data.created_at, saved_to: save }, () => data.id);
        return;
      }
      ctx.out.info('The token and the Redis password are shown once; keep them in a secret store.');
      ctx.out.data(data, () =>
        ctx.out.fields([
          ['id', data.id],
          ['token', data.token],
          ['redis user', data.redis.username],
          ['redis password', data.redis.password],
          ['queue', data.queue],
        ]),
      );
    },
  },
  {
    path: ['pool', 'credentials', 'revoke'],
    summary: 'revoke a credential set (its token and Redis user at once)',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.revokePoolCredential, { params: { id: positionals[0]! } });
      ctx.out.data(data, () => `Revoked ${data.id} at ${data.revoked_at}.`);
    },
  },
  {
    path: ['pool', 'status'],
    summary: "your pool: live workers, queued and running attempts, credentials",
    async run(ctx) {
      const { data } = await (await ctx.api()).request(PublicApi.getPool, {});
      ctx.out.data(data, () =>
        [
          `Queue ${data.queue}: ${data.attempts.queued} queued, ${data.attempts.running} running.`,
          '',
          // Headed, so that an empty table ("(none)") says what is missing.
          'Live workers:',
          ctx.out.table(
            ['WORKER', 'NAME', 'RUNNING', 'CONCURRENCY', 'HEARTBEAT', 'DRAINING'],
            data.workers.map((worker) => [worker.id, worker.name, worker.running.length, worker.concurrency, `${(worker.heartbeat_age_ms / 1000).toFixed(1)}s ago`, worker.draining]),
          ),
          '',
          'Credentials:',
          ctx.out.table(['CREDENTIAL', 'LABEL', 'REDIS USER', 'CREATED'], data.credentials.map((credential) => [credential.id, credential.label, credential.redis_username, credential.created_at])),
        ].join('\n'),
      );
    },
  },
];
