#!/usr/bin/env node
// Launches the built CLI (`npx nx run cli:build` writes dist/apps/cli/main.js).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const built = fileURLToPath(new URL('../../../dist/apps/cli/main.js', import.meta.url));
if (!existsSync(built)) {
  process.stderr.write(`error: envctl is not built (${built} is missing); run: npx nx run cli:build\n`);
  process.exit(2);
}
await import(pathToFileURL(built).href);
