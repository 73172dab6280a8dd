# syntax=docker/dockerfile:1
# The Stateward manager image: Node 24 running the `stateward` command built into one file
# (`make build`: each package's src/*.ts compiled to dist/*.js, then bundled with what it imports
# from node_modules into dist/stateward.js and one chunk per operator). The image holds that and
# nothing else: no node_modules, no sources. Built so, the manager starts without Node's type
# stripper and without the code nothing calls (docs/performance.md, findings 2 and 12). Build
# with `make docker-build` (IMG=stateward:dev).
ARG NODE_IMAGE=node:24-bookworm-slim

# The workspace manifests and the lockfile, alone, so that the npm ci layer below is rebuilt
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

# The build: the whole workspace's dependencies (TypeScript and Rolldown are dev dependencies).
FROM manifests AS build
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.base.json ./
COPY hack/build.ts hack/bundle-plugins.ts hack/
COPY core/src/ core/src/
COPY operators/ operators/
COPY cli/src/ cli/src/
RUN node hack/build.ts

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/dist/ dist/
# The distroless "nonroot" uid; the chart runs the pod as 65532 with a read-only root filesystem.
USER 65532:65532
EXPOSE 8080 8081
# The memory settings keep the manager near what it holds alive (docs/performance.md, findings 8
# and 13): a young generation of 2 MiB semi-spaces; the old generation's limit after each full GC
# at 1.5 x what survived (V8's own factor reaches 4 x when memory looks plentiful); one malloc
# arena (glibc gives threads arenas of their own, and V8's worker threads left 5-6 MiB in them at
# the database-user benchmark's peak, at no measurable CPU cost). The flags took that manager's
# peak from 338 MiB (Node's defaults) to about 125 MiB; the arena, 5-6 MiB more (finding 13
# measured it with other flags; see there). The benchmarks and the memory-limit test run this ENV
# and ENTRYPOINT as written (e2e/support/image-command.ts). The chart adds the heap's ceiling
# (NODE_OPTIONS=--max-old-space-size, from the memory limit). A manager that runs no operator
# moving data (database-user alone) lowers the factor to 1.2 x and turns TurboFan off at start
# (cli/src/operators.ts, engineFlagsFor; finding 18).
ENV MALLOC_ARENA_MAX=1
ENTRYPOINT ["node", "--max-semi-space-size=2", "--heap-growing-percent=50", "dist/stateward.js"]
CMD ["run"]
