export * from './event-outbox.ts';
export * from './outbox-relay.ts';
export * from './audit-log.ts';
