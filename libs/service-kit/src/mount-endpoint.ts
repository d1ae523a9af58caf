import { PublicApi, type ApiService, type Endpoint, type RawBody } from '@envengine/contracts';
import type { RequestHandler, Router } from 'express';
import type { z } from 'zod';
import { defineRoute, type RouteInput } from './define-route.ts';

type SchemaOf<E, K extends string> = E extends { [key in K]: infer S extends z.ZodType } ? z.output<S> : undefined;
type JsonResponses<E extends Endpoint> = { [S in keyof E['responses']]: E['responses'][S] extends z.ZodType ? S : never }[keyof E['responses']];

/** What a handler answers: one of the endpoint's success statuses (the first when left out) and its `data`. */
export type EndpointResult<E extends Endpoint> = {
  [S in JsonResponses<E>]: { status?: S; data: E['responses'][S] extends z.ZodType ? z.output<E['responses'][S]> : never };
}[JsonResponses<E>];

export type EndpointInput<E extends Endpoint> = RouteInput<SchemaOf<E, 'params'>, SchemaOf<E, 'body'>, SchemaOf<E, 'query'>>;

/** An endpoint whose body, when it has one, is JSON. */
type JsonEndpoint = Endpoint & { body?: z.ZodType };

/**
 * Mounts the handler of a public endpoint (`@envengine/contracts` PublicApi) at its method
 * and path, with its input validated and its answer typed by the contract: the routes
 * and the OpenAPI document cannot drift apart.
 */
export function mountEndpoint<E extends JsonEndpoint>(
  router: Router,
  endpoint: E,
  handler: (input: EndpointInput<E>) => Promise<EndpointResult<E>>,
): void {
  const successStatus = Number(Object.keys(endpoint.responses)[0]);
  const route = defineRoute(endpoint, async (input) => {
    const result = await handler(input as EndpointInput<E>);
    return { status: (result.status as number | undefined) ?? successStatus, data: result.data };
  });
  router[endpoint.method](endpoint.path, route);
}

/** Mounts a handler that reads or writes raw bytes (bundles) at an endpoint's method and path. */
export function mountRawEndpoint(router: Router, endpoint: Endpoint & { responses: Readonly<Record<number, z.ZodType | RawBody>> }, handler: RequestHandler): void {
  router[endpoint.method](endpoint.path, handler);
}

export interface MountedRoute {
  method: string;
  path: string;
}

interface RouterLayer {
  route?: { path: string; methods: Record<string, boolean> };
  handle?: { stack?: RouterLayer[] };
}

/** The method and path of every route mounted on a router and the routers it uses (mounted without a path). */
export function routesOf(router: Router): MountedRoute[] {
  const routes: MountedRoute[] = [];
  const visit = (layers: RouterLayer[]) => {
    for (const layer of layers) {
      if (layer.route) {
        for (const [method, on] of Object.entries(layer.route.methods)) if (on && method !== '_all') routes.push({ method, path: layer.route.path });
      } else if (layer.handle?.stack) {
        visit(layer.handle.stack);
      }
    }
  };
  visit((router as unknown as { stack: RouterLayer[] }).stack);
  return routes;
}

/**
 * A service's public routes as its routers mount them and as `PublicApi` declares them
 * (`METHOD path`, sorted), for the test that they are the same.
 */
export function publicRoutesOf(service: ApiService, ...routers: Router[]): { mounted: string[]; declared: string[] } {
  const mounted = routers.flatMap(routesOf).map((route) => `${route.method} ${route.path}`);
  const declared = (Object.values(PublicApi) as Endpoint[]).filter((endpoint) => endpoint.service === service).map((endpoint) => `${endpoint.method} ${endpoint.path}`);
  return { mounted: mounted.sort(), declared: declared.sort() };
}

