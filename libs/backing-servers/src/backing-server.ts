import type { ManagedProcess } from './managed-process.ts';

/** Where a server came from, in the order DESIGN.md §3 tries them. */
export type ServerSource = 'url' | 'path' | 'pip' | 'go-build' | 'apt';

export interface BackingServer {
  name: 'mongodb' | 'redis' | 'temporal';
  /** Connection string for MongoDB and Redis; `host:port` for Temporal. */
  url: string;
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
