# Builds any app of the workspace: docker build --build-arg APP=gateway .
# syntax=docker/dockerfile:1
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
ARG APP
WORKDIR /workspace
COPY . .
RUN test -n "${APP}" || (echo "--build-arg APP=<app name> is required" && exit 1)
RUN npm install --no-audit --no-fund \
 && NX_DAEMON=false NX_NO_CLOUD=true npx nx run "${APP}:build" --outputStyle=static \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ARG APP
ENV NODE_ENV=production
# The attempt-worker runs every asset in an OS sandbox (bubblewrap; prlimit from util-linux),
# and gives environments with public egress a user-mode network (slirp4netns, iproute2).
RUN if [ "${APP}" = attempt-worker ]; then \
      apt-get update && apt-get install -y --no-install-recommends bubblewrap slirp4netns iproute2 \
      && rm -rf /var/lib/apt/lists/* \
      && mkdir -p /var/lib/envengine/lake && chown node:node /var/lib/envengine/lake; \
    fi
WORKDIR /app
COPY --from=build /workspace/node_modules ./node_modules
COPY --from=build /workspace/dist/apps/${APP} ./dist
USER node
CMD ["node", "--enable-source-maps", "dist/main.js"]
