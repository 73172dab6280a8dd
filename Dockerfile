# syntax=docker/dockerfile:1
# The Stateward manager image: Node 24 running the `stateward` command compiled to JavaScript
# (`make build`: each package's src/*.ts to dist/*.js), with the production dependencies of
# the command only. Compiled, the manager starts without loading Node's type stripper
# (docs/performance.md). Build with `make docker-build` (IMG=stateward:dev).
ARG NODE_IMAGE=node:24-bookworm-slim

# The workspace manifests and the lockfile, alone, so that the npm ci layers below are rebuilt
# only when a package.json or the lockfile changes.
FROM ${NODE_IMAGE} AS manifests
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

# Production dependencies of @stateward/cli and the workspace packages it imports (core, the
# operators, mysql); no dev tools, no e2e dependencies.
FROM manifests AS deps
RUN npm ci --omit=dev --workspace=@stateward/cli --include-workspace-root=false \
      --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# The compiler: the whole workspace's dependencies (TypeScript is a dev dependency).
FROM manifests AS build
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json ./
COPY hack/build.ts hack/
COPY core/src/ core/src/
COPY operators/ operators/
COPY cli/src/ cli/src/
RUN node hack/build.ts

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
# node_modules/@stateward/* are relative symlinks to the workspace folders copied below.
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
# Each package's package.json and its compiled dist/ (no sources, no tests).
COPY --from=build /app/core/package.json core/
COPY --from=build /app/core/dist/ core/dist/
COPY --from=build /app/operators/mysql/package.json operators/mysql/
COPY --from=build /app/operators/mysql/dist/ operators/mysql/dist/
COPY --from=build /app/operators/database-user/package.json operators/database-user/
COPY --from=build /app/operators/database-user/dist/ operators/database-user/dist/
COPY --from=build /app/operators/mysql-backup/package.json operators/mysql-backup/
COPY --from=build /app/operators/mysql-backup/dist/ operators/mysql-backup/dist/
COPY --from=build /app/operators/mysql-cluster/package.json operators/mysql-cluster/
COPY --from=build /app/operators/mysql-cluster/dist/ operators/mysql-cluster/dist/
COPY --from=build /app/cli/package.json cli/
COPY --from=build /app/cli/dist/ cli/dist/
# The distroless "nonroot" uid; the chart runs the pod as 65532 with a read-only root filesystem.
USER 65532:65532
EXPOSE 8080 8081
# --conditions=stateward-dist: @stateward/* resolve to their dist/ (each package.json's exports).
# The V8 memory flags keep the heap near what the manager holds alive instead of letting V8 grow
# it lazily (docs/performance.md, finding 8): a young generation of 2 MiB semi-spaces, and the
# old generation's limit after each full GC at 1.5 × what survived (V8's own factor reaches 4 ×
# when memory looks plentiful). With them the database-user benchmark's manager peaked at about
# 146 MiB instead of 338 MiB, at no measurable CPU cost. The benchmarks and the memory-limit test
# run this line as written (e2e/support/image-command.ts). The chart adds the heap's ceiling
# (NODE_OPTIONS=--max-old-space-size, from the memory limit).
ENTRYPOINT ["node", "--max-semi-space-size=2", "--heap-growing-percent=50", "--conditions=stateward-dist", "cli/dist/main.js"]
CMD ["run"]
