import { runCli } from './cli.ts';
import { loadCliEnvironment } from './config.ts';
import packageJson from '../package.json' with { type: 'json' };

const code = await runCli(process.argv.slice(2), {
  io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  env: loadCliEnvironment(process.env),
  version: packageJson.version,
});
// Let stdout drain (a pipe is asynchronous) before the process ends.
process.exitCode = code;
