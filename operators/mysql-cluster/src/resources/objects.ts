// The objects a MySQLCluster owns, as the operator wants them. They are
// server-side applied with the cluster as controller owner, so a field edited
// by hand is put back and a deleted object is recreated on the next
// reconcile; each carries only the fields the operator has an opinion on.
import { createHash } from "node:crypto";
import { builtin, controllerReference, type KubeObject, type OwnerReference } from "@stateward/core";
import { MySQLInstanceKind, type Flavor, type MySQLInstance } from "@stateward/mysql";
import { DEFAULT_IMAGE, DEFAULT_SECRET_DELETION_POLICY, MySQLClusterKind, type MySQLCluster } from "../api.ts";
import { INIT_SCRIPT, renderMyCnf } from "../config/my-cnf.ts";
import { MEMBER_READY_CONDITION, MYSQL_PORT, ROLE_LABEL, clusterNames, commonLabels, primaryHost, selectorLabels } from "./names.ts";

export const MY_CNF_KEY = "my.cnf";
/** Pod template annotation: the my.cnf's hash, so a config change shows as a template change. */
export const CONFIG_HASH_ANNOTATION = "stateward.io/config-hash";

export interface RootSecretRef {
  name: string;
  key: string;
}

/** The Secret holding the root password: the user's, or the generated one. */
export function rootSecretRef(cluster: MySQLCluster): RootSecretRef {
  const ref = cluster.spec.rootPasswordSecretRef;
  return ref ? { name: ref.name, key: ref.key ?? "password" } : { name: clusterNames(cluster.metadata.name ?? "").rootSecret, key: "password" };
}

function meta(cluster: MySQLCluster, name: string, extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}) {
  const clusterName = cluster.metadata.name ?? "";
  return {
    name,
    namespace: cluster.metadata.namespace,
    labels: { ...commonLabels(clusterName), ...extra.labels },
    ...(extra.annotations ? { annotations: extra.annotations } : {}),
    ownerReferences: [owner(cluster)],
  };
}

export function owner(cluster: MySQLCluster): OwnerReference {
  return controllerReference(cluster, MySQLClusterKind.resource);
}

export function configMap(cluster: MySQLCluster, flavor: Flavor): KubeObject {
  const names = clusterNames(cluster.metadata.name ?? "");
  return {
    apiVersion: builtin.configMap.apiVersion,
    kind: builtin.configMap.kind,
    metadata: meta(cluster, names.configMap),
    data: { [MY_CNF_KEY]: renderMyCnf(flavor, cluster.spec.config ?? {}) },
  } as KubeObject;
}

export function configHash(cm: KubeObject): string {
  const data = (cm as { data?: Record<string, string> }).data ?? {};
  return createHash("sha256").update(data[MY_CNF_KEY] ?? "").digest("hex").slice(0, 16);
}

function service(cluster: MySQLCluster, name: string, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: builtin.service.apiVersion,
    kind: builtin.service.kind,
    metadata: meta(cluster, name),
    spec: { ports: [{ name: "mysql", port: MYSQL_PORT, targetPort: "mysql", protocol: "TCP" }], ...spec },
  } as KubeObject;
}

/** The headless Service: each pod's stable DNS name, ready or not (replication and seeding need them before Ready). */
export function headlessService(cluster: MySQLCluster): KubeObject {
  const name = cluster.metadata.name ?? "";
  return service(cluster, clusterNames(name).headlessService, { clusterIP: "None", publishNotReadyAddresses: true, selector: selectorLabels(name) });
}

/** The primary Service: follows the role label, so a switchover moves it. */
export function primaryService(cluster: MySQLCluster): KubeObject {
  const name = cluster.metadata.name ?? "";
  return service(cluster, clusterNames(name).primaryService, { type: "ClusterIP", selector: { ...selectorLabels(name), [ROLE_LABEL]: "primary" } });
}

/** The read-only Service: Ready replicas only (caught up, through the readiness gate). */
export function readOnlyService(cluster: MySQLCluster): KubeObject {
  const name = cluster.metadata.name ?? "";
  return service(cluster, clusterNames(name).readOnlyService, { type: "ClusterIP", selector: { ...selectorLabels(name), [ROLE_LABEL]: "replica" } });
}

/** At most one server down at a time for voluntary disruptions (drains). */
export function podDisruptionBudget(cluster: MySQLCluster): KubeObject {
  const name = cluster.metadata.name ?? "";
  return {
    apiVersion: builtin.podDisruptionBudget.apiVersion,
    kind: builtin.podDisruptionBudget.kind,
    metadata: meta(cluster, clusterNames(name).podDisruptionBudget),
    spec: { maxUnavailable: 1, selector: { matchLabels: selectorLabels(name) } },
  } as KubeObject;
}

/**
 * The MySQLInstance other operators use: the primary Service, as root. It
 * carries the cluster's target label (`--target`), so the managers that act
 * on the cluster's DatabaseUsers and backups see it.
 */
export function publishedInstance(cluster: MySQLCluster, targetLabel = "stateward.io/target"): MySQLInstance {
  const name = cluster.metadata.name ?? "";
  const ns = cluster.metadata.namespace ?? "";
  const root = rootSecretRef(cluster);
  const target = cluster.metadata.labels?.[targetLabel];
  return {
    apiVersion: MySQLInstanceKind.apiVersion,
    kind: MySQLInstanceKind.kind,
    metadata: meta(cluster, clusterNames(name).instance, target === undefined ? {} : { labels: { [targetLabel]: target } }),
    spec: {
      host: primaryHost(name, ns),
      port: MYSQL_PORT,
      adminSecretRef: { name: root.name, usernameKey: "username", passwordKey: root.key },
      tls: { mode: "preferred" },
    },
  };
}

/** Labels on the StatefulSet's pods (the role label is added per pod by the operator). */
function podLabels(cluster: string): Record<string, string> {
  return commonLabels(cluster);
}

export interface StatefulSetInput {
  flavor: Flavor;
  /** The pods the StatefulSet should have now (scale-in lowers it only after replication stopped). */
  replicas: number;
  configHash: string;
  /** The live StatefulSet's claim templates: they cannot change after creation, so they are re-applied as they are. */
  liveClaimTemplates?: unknown[];
}

export function statefulSet(cluster: MySQLCluster, input: StatefulSetInput): KubeObject {
  const name = cluster.metadata.name ?? "";
  const names = clusterNames(name);
  const root = rootSecretRef(cluster);
  const image = cluster.spec.image ?? DEFAULT_IMAGE;
  const passwordEnv = input.flavor === "MySQL" ? "MYSQL_ROOT_PASSWORD" : "MARIADB_ROOT_PASSWORD";
  const resources = cluster.spec.resources ?? {};
  const claimTemplates = input.liveClaimTemplates ?? [
    {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: "data", labels: selectorLabels(name) },
      spec: {
        accessModes: ["ReadWriteOnce"],
        ...(cluster.spec.storage.storageClassName ? { storageClassName: cluster.spec.storage.storageClassName } : {}),
        resources: { requests: { storage: cluster.spec.storage.size } },
      },
    },
  ];
  return {
    apiVersion: builtin.statefulSet.apiVersion,
    kind: builtin.statefulSet.kind,
    metadata: meta(cluster, names.statefulSet),
    spec: {
      replicas: input.replicas,
      serviceName: names.headlessService,
      selector: { matchLabels: selectorLabels(name) },
      // One at a time: a new replica is seeded and caught up before the next starts.
      podManagementPolicy: "OrderedReady",
      // The operator restarts pods itself, replicas first and the primary last.
      updateStrategy: { type: "OnDelete" },
      // Scaling in keeps the data volumes: scaling out again resumes from them.
      persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
      template: {
        metadata: { labels: podLabels(name), annotations: { [CONFIG_HASH_ANNOTATION]: input.configHash } },
        spec: {
          readinessGates: [{ conditionType: MEMBER_READY_CONDITION }],
          terminationGracePeriodSeconds: 60,
          securityContext: { runAsUser: 999, runAsGroup: 999, fsGroup: 999, runAsNonRoot: true },
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                { weight: 100, podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: selectorLabels(name) } } },
              ],
            },
          },
          initContainers: [
            {
              name: "config",
              image,
              command: ["sh", "-c", INIT_SCRIPT],
              volumeMounts: [
                { name: "config", mountPath: "/etc/stateward", readOnly: true },
                { name: "conf-d", mountPath: "/etc/mysql/conf.d" },
              ],
              securityContext: { allowPrivilegeEscalation: false },
            },
          ],
          containers: [
            {
              name: "mysql",
              image,
              ports: [{ name: "mysql", containerPort: MYSQL_PORT, protocol: "TCP" }],
              env: [{ name: passwordEnv, valueFrom: { secretKeyRef: { name: root.name, key: root.key } } }],
              ...(resources.requests || resources.limits ? { resources: { ...(resources.requests ? { requests: resources.requests } : {}), ...(resources.limits ? { limits: resources.limits } : {}) } } : {}),
              volumeMounts: [
                { name: "data", mountPath: "/var/lib/mysql" },
                { name: "conf-d", mountPath: "/etc/mysql/conf.d" },
              ],
              // The server accepts connections. Whether it is a caught-up member is the readiness gate's business.
              readinessProbe: { tcpSocket: { port: "mysql" }, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 3 },
              // Generous: crash recovery of a large InnoDB can take minutes before the port opens.
              livenessProbe: { tcpSocket: { port: "mysql" }, initialDelaySeconds: 120, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
            },
          ],
          volumes: [
            { name: "config", configMap: { name: names.configMap } },
            { name: "conf-d", emptyDir: {} },
          ],
        },
      },
      volumeClaimTemplates: claimTemplates,
    },
  } as KubeObject;
}

/** A generated password Secret: created once, never overwritten; owned by the cluster only when generated Secrets go with it. */
export function generatedSecret(cluster: MySQLCluster, name: string, data: Record<string, string>): KubeObject {
  const deleteWithCluster = (cluster.spec.secretDeletionPolicy ?? DEFAULT_SECRET_DELETION_POLICY) === "Delete";
  const clusterName = cluster.metadata.name ?? "";
  return {
    apiVersion: builtin.secret.apiVersion,
    kind: builtin.secret.kind,
    metadata: {
      name,
      namespace: cluster.metadata.namespace,
      labels: commonLabels(clusterName),
      ...(deleteWithCluster ? { ownerReferences: [owner(cluster)] } : {}),
    },
    type: "Opaque",
    stringData: data,
  } as KubeObject;
}
