// The mysql-cluster operator as an OperatorModule: the MySQLCluster controller,
// sharing the MySQL services (connector, Secret reader, address resolver) with
// the other MySQL operators of the process.
import {
  Tokens,
  builtin,
  cacheKind,
  bindResolved,
  type KubeObject,
  type OperatorModule,
  type Request,
} from "@stateward/core";
import {
  MySQLInstanceKind,
  MySQLTokens,
  bindInstanceController,
  bindMySQLServices,
  instanceControllerCache,
  mysqlControllerDeps,
  type ServerAddressResolver,
} from "@stateward/mysql";
import { ContainerModule } from "inversify";
import { MySQLClusterKind, type MySQLCluster } from "./api.ts";
import { ClusterReconciler } from "./controllers/cluster-reconciler.ts";
import { MANAGED_OBJECTS_SELECTOR, clusterNames, selectorLabels } from "./resources/names.ts";
import { rootSecretRef } from "./resources/objects.ts";

export interface MySQLClusterOperatorOptions {
  /**
   * Where pods' and Services' DNS names are reached. Only for tests and
   * development outside a cluster (the integration tests map pods to local
   * mariadbd instances); in a cluster the names are used as they are.
   * Applies to every MySQL operator of the process.
   */
  addresses?: ServerAddressResolver;
}

const CLUSTER = MySQLClusterKind.resource;

export function createMySQLClusterOperator(options: MySQLClusterOperatorOptions = {}): OperatorModule {
  return {
    name: "mysql-cluster",
    // The MySQLInstance CRD comes along: the operator publishes one per cluster.
    kinds: [MySQLClusterKind, MySQLInstanceKind],
    cache: [
      // Only what the operator made is cached (its labels), not every object of these kinds in the
      // namespaces. In full: the reconciler compares specs (and reads pods' readiness gates).
      ...[builtin.statefulSet, builtin.service, builtin.configMap, builtin.podDisruptionBudget, builtin.pod].map((kind) => cacheKind(kind, { labelSelector: MANAGED_OBJECTS_SELECTOR })),
      // Owned MySQLInstances are cached as every MySQL operator caches them (the manager's target
      // applies); Secrets as metadata only.
      ...instanceControllerCache,
    ],
    container: new ContainerModule((container) => {
      if (options.addresses) {
        if (container.isBound(MySQLTokens.ServerAddresses)) throw new Error("the MySQL server address resolver is already bound: load the mysql-cluster operator first");
        container.bind<ServerAddressResolver>(MySQLTokens.ServerAddresses).toConstantValue(options.addresses);
      }
      bindMySQLServices(container);
      bindInstanceController(container);
      const deps = { ...mysqlControllerDeps, addresses: MySQLTokens.ServerAddresses, settings: Tokens.ManagerSettings, tasks: Tokens.BackgroundTasks, clock: Tokens.Clock, metrics: Tokens.Metrics };
      bindResolved(container.bind, Tokens.ControllerSetup, deps, ({ client, cache, events, connector, secrets, addresses, settings, tasks, clock, metrics }) => ({
        setup: (builder) => {
          // Pods belong to the StatefulSet, not to the cluster: mapped by label.
          const podToCluster = (pod: KubeObject): Request[] => {
            const labels = pod.metadata.labels ?? {};
            const cluster = labels["app.kubernetes.io/instance"];
            if (cluster === undefined || labels["app.kubernetes.io/name"] !== selectorLabels(cluster)["app.kubernetes.io/name"]) return [];
            return [{ namespace: pod.metadata.namespace, name: cluster }];
          };
          // A Secret a cluster uses (its root Secret, generated or not, and the replication Secret).
          const secretToClusters = (secret: KubeObject): Request[] =>
            cache
              .list<MySQLCluster>(CLUSTER, { namespace: secret.metadata.namespace })
              .filter((c) => {
                const names = clusterNames(c.metadata.name ?? "");
                return [rootSecretRef(c).name, names.replicationSecret].includes(secret.metadata.name ?? "");
              })
              .map((c) => ({ namespace: c.metadata.namespace, name: c.metadata.name ?? "" }));
          builder
            .named("mysqlcluster")
            .for(CLUSTER)
            .owns(builtin.statefulSet)
            .owns(builtin.service)
            .owns(builtin.configMap)
            .owns(builtin.podDisruptionBudget)
            .owns(MySQLInstanceKind.resource)
            .watches(builtin.pod, podToCluster)
            .watches(builtin.secret, secretToClusters)
            // Seeds run in the background; a reconcile still talks to every server of its cluster.
            .withOptions({ maxConcurrentReconciles: 4 })
            .complete(new ClusterReconciler({ client, cache, events: events("mysqlcluster"), connector, secrets, addresses, tasks, clock, metrics, targetLabel: settings.targetLabel }));
        },
      }));
    }),
  };
}

export const mysqlClusterOperator: OperatorModule = createMySQLClusterOperator();
