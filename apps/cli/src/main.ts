import { runCli } from './cli.ts';
import { loadCliEnvironment } from './config.ts';
import { ExitCode } from './exit-codes.ts';
import packageJson from '../package.json' with { type: 'json' };

// A reader that stopped reading (`envctl runs logs ID | head -2`) has what it wanted: end
// quietly with exit 0, as a closed pipe is no failure of envctl's (and `set -o pipefail`
// scripts keep working), instead of Node's unhandled EPIPE stack trace. Nothing more can be
// said on a closed stdout; a closed stderr likewise ends the process without a word.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') process.exit(ExitCode.ok);
    throw error;
  });
}

const code = await runCli(process.argv.slice(2), {
  io: { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  env: loadCliEnvironment(process.env),
  version: packageJson.version,
});
// Let stdout drain (a pipe is asynchronous) before the process ends.
process.exitCode = code;
