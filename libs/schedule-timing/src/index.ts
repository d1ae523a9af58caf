export { cronExpressionProblem, parseCronExpression, type ParsedCron } from './cron-expression.ts';
export { fallBackFires, isDroppedTick, nextFireTimes, springForwardFires, tickKeyOf } from './fire-times.ts';
export { wallTimeAt } from './zoned-time.ts';
export { MAX_MISSED_COUNTED, planTick, type TickPlan } from './tick-plan.ts';
