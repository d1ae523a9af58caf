import { INTERNAL_API_BASE, InternalApi, PublicApi, type ApiService, type Endpoint, type InternalApiCredential, type InternalRoute, type RouteContract } from '@envengine/contracts';
import type { RequestHandler, Router } from 'express';
import type { z } from 'zod';
import type { PrivateApi } from './create-service-app.ts';
import { defineRoute, type RouteInput } from './define-route.ts';

type SchemaOf<E, K extends string> = E extends { [key in K]: infer S extends z.ZodType } ? z.output<S> : undefined;
type JsonResponses<E extends RouteContract> = { [S in keyof E['responses']]: E['responses'][S] extends z.ZodType ? S : never }[keyof E['responses']];

/** What a handler answers: one of the route's success statuses (the first when left out) and its `data`. */
export type EndpointResult<E extends RouteContract> = {
  [S in JsonResponses<E>]: { status?: S; data: E['responses'][S] extends z.ZodType ? z.output<E['responses'][S]> : never };
}[JsonResponses<E>];

export type EndpointInput<E extends RouteContract> = RouteInput<SchemaOf<E, 'params'>, SchemaOf<E, 'body'>, SchemaOf<E, 'query'>>;

/** A route (of `PublicApi` or `InternalApi`) whose body, when it has one, is JSON. */
type JsonRoute = RouteContract & { readonly body?: z.ZodType };

export interface MountOptions {
  /**
   * Where the router is mounted when that is narrower than the route's base (a private API
   * of its own credential, e.g. `/internal/v1/lifecycle`): Express strips it from the path
   * the router sees. Default: the route's base.
   */
  mountedAt?: string;
  /** Run ahead of the input's checks (a header the route refuses before its body). */
  before?: readonly RequestHandler[];
}

/** The route's path as a router mounted at `mountedAt` sees it. */
function pathUnder(route: RouteContract, mountedAt: string = route.base): string {
  const full = `${route.base}${route.path}`;
  if (full !== mountedAt && !full.startsWith(`${mountedAt}/`)) throw new Error(`${route.method.toUpperCase()} ${full} cannot be mounted on a router at ${mountedAt}`);
  return full.slice(mountedAt.length) || '/';
}

/**
 * Mounts the handler of a table's route (`PublicApi`, `InternalApi`) at its method and
 * path, with its input validated and its answer typed by the contract: the routes, their
 * clients and the OpenAPI document cannot drift apart.
 */
export function mountEndpoint<E extends JsonRoute>(
  router: Router,
  endpoint: E,
  handler: (input: EndpointInput<E>) => Promise<EndpointResult<E>>,
  options: MountOptions = {},
): void {
  const successStatus = Number(Object.keys(endpoint.responses)[0]);
  const route = defineRoute(endpoint, async (input) => {
    const result = await handler(input as EndpointInput<E>);
    return { status: (result.status as number | undefined) ?? successStatus, data: result.data };
  });
  router[endpoint.method](pathUnder(endpoint, options.mountedAt), ...(options.before ?? []), route);
}

/** Mounts a handler that reads or writes raw bytes (bundles) at a route's method and path. */
export function mountRawEndpoint(router: Router, endpoint: RouteContract, handler: RequestHandler): void {
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

/** A router of `InternalApi` routes behind the credential they name, as a service mounts it. */
export interface InternalMount {
  credential: InternalApiCredential;
  routes: Router;
  /** Where it is mounted; default `/internal/v1`. A narrower path comes first in a list. */
  path?: string;
}

/** The mounts with their credentials' values: `runInternalService`'s `privateApi`. */
export function privateApiOf(mounts: readonly InternalMount[], credentials: Readonly<Partial<Record<InternalApiCredential, string>>>): PrivateApi[] {
  return mounts.map(({ credential, routes, path }) => {
    const value = credentials[credential];
    if (!value) throw new Error(`The ${credential} credential, which opens ${path ?? INTERNAL_API_BASE}, is not configured`);
    return path === undefined ? { credential: value, routes } : { credential: value, routes, path };
  });
}

/**
 * A service's internal routes as its mounts serve them and as `InternalApi` declares them
 * (`METHOD path (credential)`, sorted), for the test that they are the same.
 */
export function internalRoutesOf(service: ApiService, ...mounts: InternalMount[]): { mounted: string[]; declared: string[] } {
  const mounted = mounts.flatMap((mount) =>
    routesOf(mount.routes).map((route) => `${route.method} ${mount.path ?? INTERNAL_API_BASE}${route.path === '/' ? '' : route.path} (${mount.credential})`),
  );
  const declared = (Object.values(InternalApi) as InternalRoute[])
    .filter((route) => route.service === service)
    .map((route) => `${route.method} ${route.base}${route.path} (${route.credential})`);
  return { mounted: mounted.sort(), declared: declared.sort() };
}
