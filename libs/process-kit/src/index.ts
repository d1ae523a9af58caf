// What every process of the engine needs, and nothing more: its settings read once, JSON
// logs, a stop on SIGTERM, and health endpoints. No web framework and no database driver,
// so the installable pool worker carries neither.
export * from './config.ts';
export * from './logger.ts';
export * from './signals.ts';
export * from './readiness.ts';
export * from './health-server.ts';
