export * from './environment-schedules.ts';
