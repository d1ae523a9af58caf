export * from './environment-schedules.ts';
export * from './schedule-spec.ts';
