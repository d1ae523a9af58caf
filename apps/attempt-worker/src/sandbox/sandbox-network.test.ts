import { describe, expect, it } from 'vitest';
import { REFUSED_RANGES } from '@envengine/egress-rules';
import { refusedRoutes } from './sandbox-network.ts';

describe('refusedRoutes', () => {
  it('makes every private, link-local, CGNAT and multicast range and each host address unreachable', () => {
    const lines = refusedRoutes(['192.0.2.7', '203.0.113.1']).trim().split('\n');
    expect(lines).toEqual([...REFUSED_RANGES, '192.0.2.7/32', '203.0.113.1/32'].map((range) => `route add unreachable ${range}`));
    for (const range of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10']) expect(REFUSED_RANGES).toContain(range);
  });
});
