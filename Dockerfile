# syntax=docker/dockerfile:1
# Builds any app of the workspace:       docker build --build-arg APP=gateway .
# The installable pool worker:           docker build --target worker -t envengine-worker .
# SeaweedFS, the engine's object store:  docker build --target seaweedfs -t envengine-seaweedfs .
# Node is pinned to the release package.json names (devDependencies "node"): the worker
# takes only 26 and 24 (from 24.11).
ARG NODE_IMAGE=node:26.10.0-bookworm-slim
ARG GO_IMAGE=golang:1.26-bookworm

# SeaweedFS built from its module source at the pinned version, as `npm start` builds it
# (libs/backing-servers PINNED_GO_BUILDS): its go.mod has replace directives, so it is
# built inside a copy of its own module rather than with `go install`.
FROM ${GO_IMAGE} AS seaweedfs-build
ARG SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
RUN dir=$(cd /tmp && go mod download -json github.com/seaweedfs/seaweedfs@${SEAWEEDFS_VERSION} | sed -n 's/.*"Dir": "\(.*\)".*/\1/p') \
 && cp -r "$dir" /src && chmod -R u+w /src && cd /src \
 && CGO_ENABLED=0 go build -trimpath -o /weed ./weed

FROM debian:bookworm-slim AS seaweedfs
COPY --from=seaweedfs-build /weed /usr/local/bin/weed
ENTRYPOINT ["weed"]

# The pool worker a tenant runs on its own hosts: dist/worker-package, one bundled file
# with no npm dependency, and the OS sandbox's tools (python3-seccomp builds its filter).
FROM ${NODE_IMAGE} AS worker-build
WORKDIR /workspace
COPY . .
RUN npm install --no-audit --no-fund \
 && NX_DAEMON=false NX_NO_CLOUD=true npx nx run attempt-worker:build --outputStyle=static

FROM ${NODE_IMAGE} AS worker
ENV NODE_ENV=production BUNDLE_CACHE_DIR=/var/cache/envengine/bundles
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap slirp4netns iproute2 python3-seccomp \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/cache/envengine/bundles && chown node:node /var/cache/envengine/bundles
COPY --from=worker-build /workspace/dist/worker-package/envengine-worker/ /opt/envengine-worker/
USER node
# Give it API_URL and POOL_CREDENTIAL_FILE (or POOL_TOKEN, REDIS_URL, REDIS_USERNAME,
# REDIS_PASSWORD, POOL_QUEUE); docs/operations.md "Run a pool on another host".
ENTRYPOINT ["node", "/opt/envengine-worker/envengine-worker.mjs", "--pool"]

# Any app (the default target: keep it last).

FROM ${NODE_IMAGE} AS build
ARG APP
WORKDIR /workspace
COPY . .
RUN test -n "${APP}" || (echo "--build-arg APP=<app name> is required" && exit 1)
RUN npm install --no-audit --no-fund \
 && NX_DAEMON=false NX_NO_CLOUD=true npx nx run "${APP}:build" --outputStyle=static \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS app
ARG APP
ENV NODE_ENV=production
# The attempt-worker runs every asset in an OS sandbox (bubblewrap; prlimit from util-linux)
# under a seccomp filter it builds at start (python3-seccomp), and gives environments with
# public egress a user-mode network (slirp4netns, iproute2).
RUN if [ "${APP}" = attempt-worker ]; then \
      apt-get update && apt-get install -y --no-install-recommends bubblewrap slirp4netns iproute2 python3-seccomp \
      && rm -rf /var/lib/apt/lists/* \
      && mkdir -p /var/lib/envengine/lake && chown node:node /var/lib/envengine/lake; \
    fi
WORKDIR /app
COPY --from=build /workspace/node_modules ./node_modules
COPY --from=build /workspace/dist/apps/${APP} ./dist
USER node
CMD ["node", "--enable-source-maps", "dist/main.js"]
