# syntax=docker/dockerfile:1
# The Stateward manager image: Node 24 running the TypeScript sources directly (Node strips
# the types; nothing is compiled), with the production dependencies of the `stateward`
# command only. Build with `make docker-build` (IMG=stateward:dev).
ARG NODE_IMAGE=node:24-bookworm-slim

# Production dependencies of @stateward/cli and the workspace packages it imports (core, the
# operators, mysql); no dev tools, no e2e dependencies. Only the manifests are copied first,
# so this layer is rebuilt only when a package.json or the lockfile changes.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY core/package.json core/
COPY operators/mysql/package.json operators/mysql/
COPY operators/database-user/package.json operators/database-user/
COPY operators/mysql-backup/package.json operators/mysql-backup/
COPY operators/mysql-cluster/package.json operators/mysql-cluster/
COPY cli/package.json cli/
# npm ci checks every workspace of the lockfile against its package.json, e2e's included.
COPY e2e/package.json e2e/
RUN npm ci --omit=dev --workspace=@stateward/cli --include-workspace-root=false \
      --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
# node_modules/@stateward/* are relative symlinks to the workspace folders copied below.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY core/ core/
COPY operators/ operators/
COPY cli/ cli/
# The distroless "nonroot" uid; the chart runs the pod as 65532 with a read-only root filesystem.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "cli/src/main.ts"]
CMD ["run"]
