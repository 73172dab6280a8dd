// The MySQLInstance controller, which every MySQL operator module includes:
// whichever operators a manager runs (database-user, mysql-backup,
// mysql-cluster, any mix), a MySQLInstance's status follows its server. The
// manager's container holds one controller of a name, so the first module to
// load binds it and the others find it bound — as with the shared services.
import { Tokens, builtin, cacheKind, generationChanged, bindResolved, type CacheDeclaration, type ControllerSetup, type KubeObject } from "@stateward/core";
import type { ContainerModuleLoadOptions } from "inversify";
import { MySQLInstanceKind, instanceSecrets, type MySQLInstance } from "./instance-api.ts";
import { MySQLInstanceReconciler } from "./instance-reconciler.ts";
import { MySQLTokens } from "./services.ts";

export interface InstanceControllerOptions {
  /** How often a MySQLInstance is checked again once reachable. Defaults to 60 s. */
  checkIntervalMs?: number;
}

/** The cache index from a Secret (`<namespace>/<name>`) to the MySQLInstances using it. */
export const INSTANCE_BY_SECRET = "mysqlinstance.secret";

const MYI = MySQLInstanceKind.resource;

/**
 * What the MySQLInstance controller reads from the cache: MySQLInstances for the manager's target,
 * found by the Secrets they name, and Secrets as metadata only (a change bumps the
 * resourceVersion; SecretReader GETs the one it needs). Every module that calls
 * bindInstanceController lists these in its `cache`; the declarations merge.
 */
export const instanceControllerCache: CacheDeclaration[] = [
  cacheKind<MySQLInstance>(MYI, { target: true, indexers: { [INSTANCE_BY_SECRET]: instanceSecrets } }),
  cacheKind(builtin.secret, { metadataOnly: true }),
];

/**
 * Binds the MySQLInstance controller unless another module already did.
 * `options` only take effect for the module that binds first.
 */
export function bindInstanceController(container: Pick<ContainerModuleLoadOptions, "bind" | "isBound">, options: InstanceControllerOptions = {}): void {
  const { bind, isBound } = container;
  if (isBound(MySQLTokens.InstanceController)) return;
  const deps = { client: Tokens.KubeClient, cache: Tokens.Cache, events: Tokens.EventRecorderFactory, connector: MySQLTokens.Connector };
  bindResolved(bind, MySQLTokens.InstanceController, deps, ({ client, cache, events, connector }) => ({
    setup: (builder) => {
      const bySecret = (secret: KubeObject) =>
        cache
          .byIndex<MySQLInstance>(MYI, INSTANCE_BY_SECRET, `${secret.metadata.namespace ?? ""}/${secret.metadata.name ?? ""}`)
          .map((i) => ({ namespace: i.metadata.namespace, name: i.metadata.name ?? "" }));
      builder
        .named("mysqlinstance")
        .for(MYI, [generationChanged])
        // Cached as instanceControllerCache declares (metadata only).
        .watches(builtin.secret, bySecret)
        // A server that does not answer is tried again at least as often as a healthy one is
        // checked: its status follows the server (a cluster's primary coming up, a restart),
        // not a backoff grown to many minutes.
        .withOptions({ maxRetryDelayMs: options.checkIntervalMs ?? 60_000 })
        .complete(new MySQLInstanceReconciler(client, cache, events("mysqlinstance"), connector, { checkIntervalMs: options.checkIntervalMs }));
    },
  }));
  // The manager runs every ControllerSetup: this one under that token, bound once.
  bind<ControllerSetup>(Tokens.ControllerSetup).toService(MySQLTokens.InstanceController);
}
