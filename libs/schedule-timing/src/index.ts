export { cronExpressionProblem, parseCronExpression, type ParsedCron } from './cron-expression.ts';
export { fallBackFires, isDroppedTick, nextFireTimes, springForwardFires, tickKeyOf } from './fire-times.ts';
export { wallTimeAt } from './zoned-time.ts';
