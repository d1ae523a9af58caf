import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from './runtime-check.ts';

describe('nodeVersionProblem', () => {
  it.each(['24.11.0', 'v24.21.0', '24.99.1', '26.0.0', 'v26.10.0'])('accepts Node %s', (version) => {
    expect(nodeVersionProblem(version)).toBeNull();
  });

  it.each(['20.20.2', '22.12.0', '24.10.0', '25.0.0', '27.0.0', 'garbage'])('refuses Node %s, naming what is needed and how to get it', (version) => {
    const problem = nodeVersionProblem(version);
    expect(problem).toMatch(/needs Node\.js >=24\.11 <25 \|\| >=26 <27; this is v/);
    expect(problem).toMatch(/Install Node\.js 26/);
    // The file where `tar xzf envengine-worker-<version>.tgz` puts it (npm pack's package/ folder).
    expect(problem).toContain('npx -y node@26 package/envengine-worker.mjs --pool.');
  });

  it('names the running file in its hint when it is given', () => {
    expect(nodeVersionProblem('20.20.2', 'dist/worker-package/envengine-worker/envengine-worker.mjs')).toContain('npx -y node@26 dist/worker-package/envengine-worker/envengine-worker.mjs --pool.');
  });
});
