/** The deployables the stack runs, with their default ports (docs/design.md#running-it). */
export const SERVICES = {
  'placement-service': { defaultPort: 8081 },
  'deployment-service': { defaultPort: 8082 },
  'secrets-service': { defaultPort: 8083 },
  'workflow-worker': { defaultPort: 8084 },
  'attempt-worker': { defaultPort: 8085 },
  gateway: { defaultPort: 8080 },
} as const;
export type ServiceName = keyof typeof SERVICES;
/** The gateway's `/metrics` listener (its METRICS_PORT default): a port of its own, on the loopback. */
export const GATEWAY_METRICS_PORT = 9464;
/** The placement-service's pool gate (its POOL_GATE_PORT default): where pool workers reach their queues. */
export const POOL_GATE_PORT = 6380;
export const SERVICE_NAMES = Object.keys(SERVICES) as ServiceName[];

/** Database of each service that owns collections. */
export const SERVICE_DATABASES = {
  gateway: 'envengine_gateway',
  'placement-service': 'envengine_placement',
  'deployment-service': 'envengine_deployment',
  'secrets-service': 'envengine_secrets',
} as const;
