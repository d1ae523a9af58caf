import { describe, expect, it } from 'vitest';
import { withEgressHint } from './egress-hint.ts';

const HINT = ' (environment prod has egress none: its assets reach no network; to let them reach public hosts: envctl env set prod --egress public)';

describe('withEgressHint', () => {
  it('says how to allow the network when a network failure meets egress none, on the first line, ahead of the stack', () => {
    expect(withEgressHint('fetch failed: fetch failed', { name: 'prod', egress: 'none' })).toBe(`fetch failed: fetch failed${HINT}`);
    expect(withEgressHint('TypeError: fetch failed\n    at default (assets/x.js:2:9)', { name: 'prod', egress: 'none' })).toBe(`TypeError: fetch failed${HINT}\n    at default (assets/x.js:2:9)`);
    for (const error of ['getaddrinfo EAI_AGAIN example.com', 'connect ENETUNREACH 1.1.1.1:443', 'Access to this API has been restricted. Use --allow-net to manage permissions.']) {
      expect(withEgressHint(error, { name: 'prod', egress: 'none' })).toBe(`${error}${HINT}`);
    }
  });

  it('leaves other errors, and any error under public egress, as they are', () => {
    expect(withEgressHint('boom', { name: 'prod', egress: 'none' })).toBe('boom');
    expect(withEgressHint('fetch failed', { name: 'prod', egress: 'public' })).toBe('fetch failed');
  });
});
