import type { Egress } from '@envengine/contracts';

/**
 * What a network failure says in Node (undici's `fetch failed`, a resolver's or a socket's
 * error code, the permission model's refusal of the network), as an asset's error text
 * carries it.
 */
const NETWORK_FAILURE = /\bfetch failed\b|\b(?:ENETUNREACH|EHOSTUNREACH|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET)\b|\bgetaddrinfo\b|--allow-net\b/;

/**
 * An asset's error with, when the environment's egress is `none` and the error is a network
 * failure, what explains it and how to change it (on its first line, ahead of any stack).
 * Any other error, or one under public egress, is returned as it is.
 */
export function withEgressHint(error: string, environment: { name: string; egress: Egress }): string {
  if (environment.egress !== 'none' || !NETWORK_FAILURE.test(error)) return error;
  const hint = ` (environment ${environment.name} has egress none: its assets reach no network; to let them reach public hosts: envctl env set ${environment.name} --egress public)`;
  const end = error.indexOf('\n');
  return end === -1 ? `${error}${hint}` : `${error.slice(0, end)}${hint}${error.slice(end)}`;
}
