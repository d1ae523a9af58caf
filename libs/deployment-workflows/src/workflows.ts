// The workflow bundle's entry: every workflow the workflow-worker runs.
export { ingestDeployment } from './ingest.workflow.ts';
export { activateDeployment } from './activate.workflow.ts';
export { environmentActivations } from './environment-activations.workflow.ts';
export { scheduleTicks } from './schedule-ticks.workflow.ts';
export { environmentTeardown } from './environment-teardown.workflow.ts';
export { environmentExpiry } from './environment-expiry.workflow.ts';
