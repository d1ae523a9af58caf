export { withoutCredential } from '@envengine/process-kit';
import type { ManagedProcess } from './managed-process.ts';

/** Where a server came from, in the order docs/design.md#running-it tries them. */
export type ServerSource = 'url' | 'path' | 'pip' | 'go-build' | 'apt';

export interface BackingServer {
  name: 'mongodb' | 'redis' | 'temporal' | 's3';
  /** Connection string for MongoDB and Redis; `host:port` for Temporal; the S3 endpoint. Never carries a credential: it is shown. */
  url: string;
  /** `url` with the administrator's credential (the stack tool, the admin command, tests); `url` itself when none. */
  adminUrl: string;
  source: ServerSource;
  /** What runs it; undefined when a URL from the environment was used. */
  process?: ManagedProcess;
  /** Extra addresses a person may open, such as the Temporal UI. */
  links: Record<string, string>;
  stop(): Promise<void>;
}

export class ServerUnavailableError extends Error {
  constructor(server: string, whatToDo: string) {
    super(`No ${server} could be started. ${whatToDo}`);
    this.name = 'ServerUnavailableError';
  }
}

/** A connection string for one user (`mongodb://` or `redis://`), the credential URL-encoded. */
export function withCredential(url: string, credential: { username: string; password: string }): URL {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(credential.username);
  parsed.password = encodeURIComponent(credential.password);
  return parsed;
}
