export { cronExpressionProblem, parseCronExpression, type ParsedCron } from './cron-expression.ts';
export { nextFireTimes, tickKeyOf } from './fire-times.ts';
export { MAX_MISSED_COUNTED, planTick, type TickPlan } from './tick-plan.ts';
