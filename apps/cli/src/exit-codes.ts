/** envctl's exit codes (docs/cli.md "Exit codes"): stable, so that scripts and CI can branch on them. */
export const ExitCode = {
  ok: 0,
  /** The operation ran and failed: a failed deployment, a failed or canceled run under watch, a refused state change. */
  failed: 1,
  /** The command line or the input it named is wrong (also the API's 400/413/422 about that input). */
  usage: 2,
  /** No token, or the API refused it (401), or it lacks the scope or environment asked for (403). */
  auth: 3,
  notFound: 4,
  /** The server could not be reached, or answered that it is unavailable. */
  unreachable: 5,
  /** A wait ran out while the thing waited for was still going. */
  timedOut: 6,
  /** Ctrl-C (128 + SIGINT, as shells report it); what was watched goes on. */
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A failure the CLI reports as `error: <code>: <message>` on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    readonly exitCode: ExitCode,
    readonly code: string,
    message: string,
    /** Extra lines printed under the error (the API's `details`). */
    readonly details: readonly string[] = [],
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(ExitCode.usage, 'usage', message);
