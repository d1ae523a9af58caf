import { describe, expect, it } from 'vitest';
import { MAX_USER_FRAMES, userFacingError } from './thrown-error.ts';

describe('userFacingError', () => {
  it("keeps the name, the message and the bundle's frames, bundle-relative, and drops Node's and the engine's", () => {
    const stack = [
      "TypeError: Cannot read properties of undefined (reading 'amount')",
      '    at Module.orders (file:///bundle/assets/orders.js:3:22)',
      '    at total (file:///bundle/lib/sum%20up.js:10:5)',
      '    at runAsset (file:///opt/envengine/asset-child.js:190:11)',
      '    at process.processTicksAndRejections (node:internal/process/task_queues:105:5)',
      '    at /bundle/lib/legacy.cjs:7:1',
    ].join('\n');
    expect(userFacingError({ message: "Cannot read properties of undefined (reading 'amount')", stack }, '/bundle')).toBe(
      [
        "TypeError: Cannot read properties of undefined (reading 'amount')",
        '    at Module.orders (assets/orders.js:3:22)',
        '    at total (lib/sum up.js:10:5)',
        '    at lib/legacy.cjs:7:1',
      ].join('\n'),
    );
  });

  it('keeps a multi-line message whole, and works unsandboxed (the bundle at its host path)', () => {
    const stack = 'MyError: first line\nsecond line\n    at file:///var/cache/envengine/bundles/ab/assets/x.js:1:2';
    expect(userFacingError({ message: 'first line\nsecond line', stack }, '/var/cache/envengine/bundles/ab/')).toBe('MyError: first line\nsecond line\n    at assets/x.js:1:2');
  });

  it('never shows a frame outside the bundle, even one whose path starts with the same letters', () => {
    const stack = 'Error: x\n    at f (file:///bundle-other/a.js:1:1)\n    at g (file:///etc/passwd:1:1)\n    at h (file:///tmp/bundle/a.js:1:1)';
    expect(userFacingError({ message: 'x', stack }, '/bundle')).toBe('x');
  });

  it('falls back to the message when there is no stack or it does not hold the message', () => {
    expect(userFacingError({ message: 'plain' }, '/bundle')).toBe('plain');
    expect(userFacingError({ message: 'thrown string', stack: 'Error: other\n    at file:///bundle/a.js:1:1' }, '/bundle')).toBe('thrown string\n    at file:///bundle/a.js:1:1'.replace('file:///bundle/', ''));
  });

  it(`keeps at most ${MAX_USER_FRAMES} frames`, () => {
    const stack = ['RangeError: deep', ...Array.from({ length: 50 }, (_, i) => `    at f${i} (file:///bundle/r.js:${i + 1}:1)`)].join('\n');
    const shown = userFacingError({ message: 'deep', stack }, '/bundle').split('\n');
    expect(shown).toHaveLength(1 + MAX_USER_FRAMES);
    expect(shown[1]).toBe('    at f0 (r.js:1:1)');
  });
});
