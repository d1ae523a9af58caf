import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.int.test.ts'],
    globalSetup: ['./src/global-setup.ts'],
    // One stack serves every file; files run one after another (2 cores, and the
    // dependency-restart tests stop servers).
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
