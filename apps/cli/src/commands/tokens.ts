import { CreateTokenRequest, PublicApi, Role, Scope, type ApiToken } from '@envengine/contracts';
import { integerOption, listOption, stringOption, type CommandSpec } from '../command-line.ts';
import { usageError } from '../exit-codes.ts';
import { requestBody } from './request-body.ts';

const restriction = (token: Pick<ApiToken, 'environments'>) => token.environments?.join(',') ?? '(all)';
const grant = (token: Pick<ApiToken, 'role' | 'scopes'>) => token.role ?? token.scopes.join(',');

export const tokenCommands: CommandSpec[] = [
  {
    path: ['tokens', 'create'],
    summary: 'make an API token of your tenant (shown once), within your own token\'s scopes and environments',
    args: 'NAME',
    positionals: { min: 1, max: 1 },
    options: {
      role: { type: 'string', value: Role.options.join('|'), description: 'a named set of scopes' },
      scope: { type: 'string', multiple: true, value: 'SCOPE', description: `one scope instead of a role (${Scope.options.join(', ')})` },
      environment: { type: 'string', multiple: true, value: 'NAME|PREFIX*', description: 'limit it to an environment, or to names beginning with PREFIX' },
      'expires-in-days': { type: 'string', value: 'DAYS', description: 'refuse it (401 token_expired) after DAYS days' },
    },
    async run(ctx, { values, positionals }) {
      const role = stringOption(values, 'role');
      const scopes = listOption(values, 'scope');
      if ((role === undefined) === (scopes.length === 0)) throw usageError('give either --role or one --scope or more');
      const environments = listOption(values, 'environment');
      const expiresInDays = integerOption(values, 'expires-in-days', { min: 1, max: 3650 });
      const body = requestBody(CreateTokenRequest, {
        name: positionals[0]!,
        ...(role === undefined ? { scopes } : { role }),
        ...(environments.length > 0 ? { environments } : {}),
        ...(expiresInDays === undefined ? {} : { expires_in_days: expiresInDays }),
      });
      const { data } = await (await ctx.api()).request(PublicApi.createToken, { body });
      ctx.out.info('The token is shown once; keep it in a secret store.');
      ctx.out.data(data, () =>
        ctx.out.fields([
          ['id', data.id],
          ['token', data.token],
          ['scopes', grant(data)],
          ['environments', restriction(data)],
          ['expires', data.expires_at ?? 'never'],
        ]),
      );
    },
  },
  {
    path: ['tokens', 'list'],
    summary: "your tenant's live API tokens within your own token's grant (never a token itself)",
    async run(ctx) {
      const { data } = await (await ctx.api()).request(PublicApi.listTokens, {});
      ctx.out.data(data, () =>
        ctx.out.table(
          ['TOKEN', 'NAME', 'SCOPES', 'ENVIRONMENTS', 'LAST USED', 'EXPIRES'],
          data.map((token) => [token.id, token.name, grant(token), restriction(token), token.last_used_at ?? 'never', token.expires_at ?? 'never']),
        ),
      );
    },
  },
  {
    path: ['tokens', 'revoke'],
    summary: 'revoke an API token; every gateway refuses it at once',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.revokeToken, { params: { id: positionals[0]! } });
      ctx.out.data(data, () => `Revoked ${data.id} at ${data.revoked_at}.`);
    },
  },
];
