import { PublicApi, QUOTA_NAMES } from '@envengine/contracts';
import type { CommandSpec } from '../command-line.ts';

export const quotaCommands: CommandSpec[] = [
  {
    path: ['quotas'],
    summary: 'your limits and what you use of each (queued runs, environments, stored bundle bytes, secrets)',
    async run(ctx) {
      const { data } = await (await ctx.api()).request(PublicApi.getQuotas, {});
      ctx.out.data(data, () =>
        ctx.out.table(
          ['QUOTA', 'USED', 'LIMIT', 'FULLEST ENVIRONMENT'],
          QUOTA_NAMES.map((name) => {
            const quota = data[name];
            const fullest = 'by_environment' in quota ? Object.entries(quota.by_environment).sort(([, a], [, b]) => b - a)[0]?.[0] ?? '-' : '';
            return [name, { text: String(quota.used), color: quota.used >= quota.limit ? 'red' : undefined }, String(quota.limit), fullest];
          }),
        ),
      );
    },
  },
];
