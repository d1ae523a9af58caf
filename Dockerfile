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
WORKDIR /app
COPY --from=build /workspace/node_modules ./node_modules
COPY --from=build /workspace/dist/apps/${APP} ./dist
USER node
CMD ["node", "--enable-source-maps", "dist/main.js"]
