// MySQLCluster: a replicated MySQL or MariaDB deployment — one primary and
// GTID replicas (semi-synchronous by default) in a StatefulSet — declared as one resource.
import {
  QUANTITY_PATTERN,
  array,
  boolean,
  conditionsSchema,
  defineKind,
  integer,
  map,
  object,
  optional,
  preserveUnknown,
  string,
  stringEnum,
  type ObjectOf,
} from "@stateward/core";
import { FLAVORS, objectNameField, secretKeyField } from "@stateward/mysql";
import { OPERATOR_OWNED_SETTINGS, OPTION_PREFIXES, SETTING_NAME_PATTERN, SETTING_VALUE_PATTERN, operatorOwnedSettingPattern } from "./config/my-cnf.ts";

/** The most members a cluster may have: one primary and up to eight replicas. */
export const MAX_REPLICAS = 9;
export const SECRET_DELETION_POLICIES = ["Retain", "Delete"] as const;

// The spec's defaults, declared once: the schema's `default:` (what the API
// server fills in) and the code's fallback (an object the API server did not
// default, e.g. one built in memory) are the same value.
/** A primary and two replicas. */
export const DEFAULT_REPLICAS = 3;
/** The server image when spec.image is absent. */
export const DEFAULT_IMAGE = "mariadb:11.4";
/** Generated Secrets outlive the cluster, so volumes kept from it can still be opened. */
export const DEFAULT_SECRET_DELETION_POLICY = "Retain" satisfies (typeof SECRET_DELETION_POLICIES)[number];
/** How far behind the primary a replica may be and still count as caught up (Ready). */
export const DEFAULT_MAX_LAG_SECONDS = 30;
/** A rollout runs unless the user pauses it. */
export const DEFAULT_PAUSED = false;
/** How long a restarted pod has to come back Ready before the rollout stops. */
export const DEFAULT_HEALTH_GATE_SECONDS = 300;
export const REPLICATION_MODES = ["SemiSync", "Async"] as const;
export type ReplicationMode = (typeof REPLICATION_MODES)[number];
/**
 * Loss-less by default: with SemiSync a commit is acknowledged to the client
 * only once a replica has it, so a failover can promote a server holding
 * every acknowledged write. A 3-server cluster keeps that with one replica down.
 */
export const DEFAULT_REPLICATION_MODE = "SemiSync" satisfies ReplicationMode;
/**
 * How long the primary waits for a replica's acknowledgement before it commits
 * without one (falling back to asynchronous, reported): MariaDB's own default,
 * long enough for a replica's restart to be the only thing that trips it.
 */
export const DEFAULT_SEMI_SYNC_TIMEOUT_SECONDS = 10;
export const FAILOVER_POLICIES = ["Automatic", "Manual"] as const;
export type FailoverPolicy = (typeof FAILOVER_POLICIES)[number];
export const DEFAULT_FAILOVER_POLICY = "Automatic" satisfies FailoverPolicy;
/**
 * How long the primary must be unreachable (with a second signal) before it
 * is failed over: three times the semi-sync timeout — a server restart or a
 * network blip is over well within it, and a lost node costs half a minute.
 */
export const DEFAULT_DETECTION_SECONDS = 30;
/** A failover that could lose acknowledged writes waits for the user unless this is set. */
export const DEFAULT_ALLOW_DATA_LOSS = false;

// The operator's pace (no field of the spec): how soon a cluster is looked at again.
/** While something is converging. */
export const CONVERGING_REQUEUE_MS = 5_000;
/** A converged cluster is looked at again this often, to keep replication state in status fresh. */
export const STEADY_REQUEUE_MS = 30_000;

const quantityField = (description: string) => optional(string(description, { pattern: QUANTITY_PATTERN, maxLength: 64 }));

const computeResources = object(
  {
    cpu: quantityField("CPU, e.g. 500m or 2."),
    memory: quantityField("Memory, e.g. 1Gi."),
  },
  "CPU and memory.",
);

export const MEMBER_ROLES = ["primary", "replica"] as const;
export const CLUSTER_PHASES = ["Pending", "Provisioning", "Scaling", "Upgrading", "Running", "Degraded", "Failed"] as const;

export const MySQLClusterKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "MySQLCluster",
  plural: "mysqlclusters",
  shortNames: ["myc"],
  scope: "Namespaced",
  description:
    "A replicated MySQL or MariaDB deployment: a primary and GTID replicas (semi-synchronous by default) in a StatefulSet, failed over automatically when the primary is lost, with Services for the primary " +
    "and the replicas. The operator also publishes a MySQLInstance named after the cluster, pointing at the primary, so DatabaseUser and " +
    "MySQLBackup objects work on the cluster unchanged.",
  validations: [{ rule: "!has(self.spec.primary) || self.spec.primary < self.spec.replicas", message: "spec.primary must be the ordinal of a pod of the cluster (below spec.replicas)", fieldPath: ".spec.primary" }],
  spec: object(
    {
      replicas: optional(
        integer(`Number of servers: the primary plus replicas (1 to ${MAX_REPLICAS}). Scaling in removes the highest ordinals after stopping their replication; their volumes are kept.`, {
          minimum: 1,
          maximum: MAX_REPLICAS,
          default: DEFAULT_REPLICAS,
        }),
      ),
      primary: optional(
        integer("Ordinal of the pod that should be the primary. Changing it requests a planned switchover to that replica (it must be Ready and up to date). When absent, the operator chooses (during a rollout, the most caught-up updated replica). With no primary in status (a cluster re-created on retained volumes, or restored without status) the pod named here is taken as the primary; unset, the server whose GTID history contains every other server's is, and when none does nothing is promoted until this is set.", {
          minimum: 0,
          maximum: MAX_REPLICAS - 1,
        }),
      ),
      image: optional(
        string("Container image of the server: an official mariadb or mysql image, or one compatible with it (same entrypoint and environment variables).", {
          minLength: 1,
          maxLength: 512,
          pattern: "^[a-zA-Z0-9][a-zA-Z0-9._/:@-]*$",
          default: DEFAULT_IMAGE,
        }),
      ),
      resources: optional(
        object(
          {
            requests: optional(computeResources),
            limits: optional(computeResources),
          },
          "CPU and memory of each server's container.",
        ),
      ),
      storage: object(
        {
          size: string("Size of each server's data volume, e.g. 10Gi. It can never shrink. Raising it expands every existing volume in place (the StorageClass must have allowVolumeExpansion: true) with no restart; progress is the StorageResized condition.", {
            pattern: QUANTITY_PATTERN,
            maxLength: 64,
            validations: [{ rule: "isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))", message: "size must be a positive quantity, e.g. 10Gi" }],
          }),
          storageClassName: optional(
            string("Storage class of the data volumes; the cluster's default class when absent. Cannot be changed later.", { minLength: 1, maxLength: 253 }),
          ),
        },
        "The data volume of each server (a PersistentVolumeClaim per pod).",
        {
          validations: [
            {
              rule: "quantity(self.size).compareTo(quantity(oldSelf.size)) >= 0",
              message: "storage.size cannot shrink: a volume cannot be made smaller without losing data",
              fieldPath: ".size",
            },
            {
              rule: "has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",
              message: "storage.storageClassName cannot be changed: existing volumes keep their class",
              fieldPath: ".storageClassName",
            },
          ],
        },
      ),
      config: optional(
        map(
          string("The setting's value as it would appear after = in my.cnf (one line).", { maxLength: 1024, pattern: SETTING_VALUE_PATTERN }),
          "Server settings (my.cnf, [mysqld] section), merged over the operator's safe defaults, e.g. max_connections: \"500\". " +
            "Names use _ or -. Settings the operator manages (server_id, read_only, log_bin, GTID and replication settings, paths and ports) are refused, also with an option prefix (loose-skip-log-bin) or abbreviated (read_onl). " +
            "A name the server does not know is reported on the cluster and not applied; prefix it with loose- to pass it anyway. " +
            "A change every server can take at runtime (MariaDB: settings that are not read-only, plain values) is applied with SET GLOBAL without a restart; any other change restarts the servers one at a time.",
          {
            maxProperties: 100,
            validations: [
              { rule: `self.all(k, k.matches('${SETTING_NAME_PATTERN}'))`, message: "config names are letters, digits, _ and -, starting with a letter (e.g. max_connections)" },
              {
                // Also through option prefixes (loose-skip-log-bin) and abbreviations (read_onl): see operatorOwnedSetting.
                rule: `self.all(k, !k.replace('-', '_').lowerAscii().matches('${operatorOwnedSettingPattern()}'))`,
                message: `config may not set what the operator manages, nor with an option prefix (${OPTION_PREFIXES.map((p) => `${p}-`).join(", ")}) or an abbreviation: ${OPERATOR_OWNED_SETTINGS.join(", ")}`,
              },
            ],
          },
        ),
      ),
      rootPasswordSecretRef: optional(
        object(
          {
            name: objectNameField("Name of a Secret in the same namespace. It must hold the root password, and username: root (the published MySQLInstance reads both)."),
            key: secretKeyField("Key of the Secret's data holding the root password.", "password"),
          },
          "The root account's password. When absent the operator generates a Secret <cluster>-root (never overwritten afterwards).",
        ),
      ),
      secretDeletionPolicy: optional(
        stringEnum(SECRET_DELETION_POLICIES, "What happens to the Secrets the operator generated (root and replication passwords) when the cluster is deleted: Retain keeps them, so volumes kept from the cluster can still be opened; Delete removes them with the cluster. A Secret given in rootPasswordSecretRef is never deleted.", {
          default: DEFAULT_SECRET_DELETION_POLICY,
        }),
      ),
      replication: optional(
        object(
          {
            mode: optional(
              stringEnum(
                REPLICATION_MODES,
                "SemiSync (default): the primary acknowledges a commit to the client only once at least one replica has received it (MariaDB semi-synchronous replication, wait point AFTER_SYNC), so a failover loses no acknowledged write; each commit waits one round trip to the nearest replica. " +
                  "When no replica acknowledges within semiSyncTimeoutSeconds the primary commits without (asynchronous) until one catches up: reported as the SemiSync condition (FellBackToAsync) and a Warning Event. " +
                  "Used with 2 or more servers and MariaDB; a single server (no replica to acknowledge) and MySQL run asynchronous. " +
                  "Async: commits never wait for a replica; a failover may lose the writes the replicas had not received.",
                { default: DEFAULT_REPLICATION_MODE },
              ),
            ),
            semiSyncTimeoutSeconds: optional(
              integer("How long a commit waits for a replica's acknowledgement before the primary falls back to asynchronous replication (SemiSync only).", {
                minimum: 1,
                maximum: 3600,
                default: DEFAULT_SEMI_SYNC_TIMEOUT_SECONDS,
              }),
            ),
          },
          "How durable a commit is: whether the primary waits for a replica before acknowledging it.",
          { default: {} },
        ),
      ),
      failover: optional(
        object(
          {
            policy: optional(
              stringEnum(
                FAILOVER_POLICIES,
                "Automatic (default): a lost primary is replaced by the most complete replica. Manual: the operator only reports it (condition FailoverNeeded and an Event); setting spec.primary to a replica's ordinal promotes that replica, even with the old primary gone.",
                { default: DEFAULT_FAILOVER_POLICY },
              ),
            ),
            detectionSeconds: optional(
              integer("How long the primary must be unreachable from the operator, with a second signal (its pod not Ready or gone, its container not running, or no replica connected to it), before it counts as lost. Not while a rollout restarts the primary itself.", {
                minimum: 5,
                maximum: 3600,
                default: DEFAULT_DETECTION_SECONDS,
              }),
            ),
            allowDataLoss: optional(
              boolean("Promote a replica even when it may lack writes the lost primary acknowledged (Async, or SemiSync that had fallen back to asynchronous, with every replica behind the primary's last known position). The FailedOver Event names the transactions that may be lost. Off by default: such a failover waits (condition FailoverNeeded, reason NoSafeCandidate).", {
                default: DEFAULT_ALLOW_DATA_LOSS,
              }),
            ),
          },
          "What happens when the primary is lost (its server unreachable and its pod not Ready): a replica is promoted, the others follow it, the primary Service and the published MySQLInstance point at it. A returning old primary rejoins as a replica unless it holds transactions the new primary lacks.",
          { default: {} },
        ),
      ),
      updateStrategy: optional(
        object(
          {
            maxLagSeconds: optional(
              integer("A replica counts as caught up (Ready) when its replication threads run and it is at most this many seconds behind the primary.", {
                minimum: 0,
                maximum: 86_400,
                default: DEFAULT_MAX_LAG_SECONDS,
              }),
            ),
            paused: optional(
              boolean("Stops the rollout before its next step: no pod is restarted and no switchover starts until it is cleared. What already runs is left as it is.", { default: DEFAULT_PAUSED }),
            ),
            healthGateSeconds: optional(
              integer("How long a restarted pod has to come back Ready (replicating and caught up). A pod that misses it pauses the rollout (condition Upgrading, reason HealthGateFailed) until the change is fixed or reverted.", {
                minimum: 10,
                maximum: 86_400,
                default: DEFAULT_HEALTH_GATE_SECONDS,
              }),
            ),
            backupBeforeUpgrade: optional(
              object(
                {
                  storage: preserveUnknown("Where the backup goes: exactly a MySQLBackup's spec.storage (s3: bucket, prefix, endpoint, region, forcePathStyle, credentialsSecretRef, tls)."),
                  databases: optional(array(string("A database name.", { minLength: 1, maxLength: 64 }), "Databases to back up; all user databases when absent.", { maxItems: 256 })),
                  compression: optional(stringEnum(["gzip", "zstd", "none"], "Compression of the backup's objects.")),
                },
                "Before the first pod of a rollout restarts, take a MySQLBackup of the cluster (named <cluster>-before-<revision>, run by the mysql-backup operator) and wait until it is Completed. A failed backup stops the rollout (condition Upgrading, reason BackupFailed).",
              ),
            ),
          },
          "How the operator judges and changes the servers. A change of image, resources or config rolls the pods one at a time: replicas first (highest ordinal first), each back Ready and caught up before the next, then a planned switchover, then the old primary.",
          { default: {} },
        ),
      ),
    },
    "The desired cluster.",
  ),
  status: object(
    {
      observedGeneration: optional(integer("The metadata.generation the status was computed for.")),
      conditions: optional(conditionsSchema()),
      phase: optional(stringEnum(CLUSTER_PHASES, "Pending (waiting for something the user must provide), Provisioning (first servers starting), Scaling (servers being added or removed), Running (every server Ready), Degraded (some server not Ready), Failed (a terminal problem; see the Ready condition).")),
      replicas: optional(integer("Number of server pods that exist.")),
      readyReplicas: optional(integer("Number of servers that are Ready: the primary writable, replicas replicating and caught up.")),
      ready: optional(string("readyReplicas/replicas, for kubectl get.")),
      selector: optional(string("Label selector of the cluster's pods (for the scale subresource).")),
      currentPrimary: optional(string("Name of the pod that is the primary.")),
      currentImage: optional(string("The image every server ran at the end of the last completed rollout.")),
      currentRevision: optional(string("The StatefulSet revision (pod template) every server ran at the end of the last completed rollout.")),
      targetImage: optional(string("The image the servers are being rolled to (spec.image).")),
      updatedReplicas: optional(integer("Number of server pods running the current pod template.")),
      updated: optional(string("updatedReplicas/replicas, for kubectl get.")),
      rollout: optional(
        object(
          {
            pod: string("The pod restarted last, which must come back Ready before the next step."),
            startedAt: string("When it was restarted (the health gate counts from here).", { format: "date-time" }),
            role: optional(
              stringEnum(
                ["primary", "replica"],
                "What the pod was when it was restarted. Only a primary restarted in place (a single server) holds failover back while it restarts; a replica restarted for the rollout may be the primary later (a switchover or a failover to it), and its loss then is failed over.",
              ),
            ),
          },
          "The rollout step in progress, if any: set when the rollout restarts a pod, cleared once that pod is back Ready on the new template.",
        ),
      ),
      lastFailover: optional(
        object(
          {
            from: string("The primary that was lost."),
            to: string("The replica promoted in its place."),
            detectedAt: string("When the primary was found lost: unreachable for detectionSeconds, confirmed by a second signal.", { format: "date-time" }),
            promotedAt: string("When the new primary was recorded.", { format: "date-time" }),
            position: optional(string("The new primary's executed GTIDs at promotion.")),
            dataLoss: optional(
              string(
                "What the failover lost or may have lost, when it was not loss-free (Async replication, semi-sync fallen back, or forced by failover.allowDataLoss): every transaction the old primary committed beyond what the new primary received. Absent when every acknowledged write was kept.",
              ),
            ),
          },
          "The last failover (a lost primary replaced), if any.",
        ),
      ),
      flavor: optional(stringEnum(FLAVORS, "MySQL or MariaDB, as detected from the primary.")),
      serverVersion: optional(string("The primary's server version.")),
      members: optional(
        array(
          object(
            {
              name: string("Pod name."),
              role: stringEnum(MEMBER_ROLES, "primary or replica."),
              ready: boolean("Whether the server is Ready: the primary writable, a replica replicating and caught up."),
              ioThread: optional(boolean("A replica's I/O (receiver) thread is running.")),
              sqlThread: optional(boolean("A replica's SQL (applier) thread is running.")),
              lagSeconds: optional(integer("Seconds the replica is behind the primary, as the server reports it.")),
              gtidExecuted: optional(string("The GTID set or position the server has executed.")),
              message: optional(string("Why the server is not Ready, when it is not.")),
            },
            "One server of the cluster.",
          ),
          "Each server's role and replication state, by ordinal.",
          { listType: "map", listMapKeys: ["name"] },
        ),
      ),
    },
    "The observed state of the cluster.",
  ),
  scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas", labelSelectorPath: ".status.selector" },
  printerColumns: [
    { name: "Ready", type: "string", jsonPath: ".status.ready" },
    { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
    { name: "Primary", type: "string", jsonPath: ".status.currentPrimary" },
    { name: "Updated", type: "string", jsonPath: ".status.updated" },
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "Image", type: "string", jsonPath: ".spec.image", priority: 1 },
    { name: "Reason", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].reason`, priority: 1 },
  ],
});

export type MySQLCluster = ObjectOf<typeof MySQLClusterKind>;
export type MySQLClusterSpec = MySQLCluster["spec"];
export type MySQLClusterStatus = NonNullable<MySQLCluster["status"]>;
export type MemberStatus = NonNullable<MySQLClusterStatus["members"]>[number];
