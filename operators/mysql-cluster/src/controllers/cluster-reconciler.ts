// MySQLCluster: level-based convergence of one cluster, in this order:
//
//   0. names        an object of another owner under one of the cluster's
//                   names (or a foreign generated-Secret name): Pending,
//                   NameConflict, nothing done (controllers/ownership.ts)
//   1. Secrets      the root and replication passwords (generated once when
//                   absent, never overwritten); a missing user Secret: Pending
//   2. config       the user's settings checked against the running primary's
//                   variables before anything is applied; unknown: Failed;
//                   applied at runtime when every server can take them
//                   (runtime-config.ts), else by a rollout (7)
//   3. objects      ConfigMap, Services, PDB, MySQLInstance, StatefulSet —
//                   server-side applied, only when they differ (drift reverted);
//                   a bigger storage.size grows the volumes first (volumes.ts)
//   4. scale in     replication stopped on the ordinals leaving, then the
//                   StatefulSet shrinks; the primary is never removed
//   5. members      the primary made writable with the replication account;
//                   each replica seeded when the primary lacks the binlogs it
//                   needs, pointed at the primary (GTID auto-position), and
//                   judged: Ready only when replicating and caught up
//   6. pods         the role label (the Services follow it) and the
//                   readiness-gate condition, when they differ
//   7. rollout      one step of a rolling update (rollout.ts decides: restart
//                   a pod, switch over, wait, or stop at a health gate)
//   8. status       members, phase, conditions; requeued while not converged,
//                   and every 30 s after to keep replication state fresh
import {
  NameConflictError,
  TerminalError,
  applyIfChanged,
  builtin,
  findCondition,
  isAlreadyExists,
  isConflict,
  isNotFound,
  writeStatus,
  type BackgroundTasks,
  type Cache,
  type ConditionUpdate,
  type EventRecorder,
  type KubeClient,
  type KubeObject,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
} from "@stateward/core";
import {
  MissingSecretError,
  MySQLError,
  MySQLInstanceKind,
  secretValue,
  type Flavor,
  type InstanceConnection,
  type MySQLConnector,
  type SecretReader,
  replicationSource,
  type ServerAddressResolver,
} from "@stateward/mysql";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { MySQLClusterKind, type MemberStatus, type MySQLCluster, type MySQLClusterStatus } from "../api.ts";
import { SERVER_ID_BASE, flavorOfImage, unknownSettings } from "../config/my-cnf.ts";
import { gtidContains, gtidCount } from "../replication/gtid.ts";
import { connectMember, memberPoolName } from "../replication/members.ts";
import { choosePrimary, type Candidate, type Selection } from "../replication/primary-selection.ts";
import { SeedBusyError, SeedError, seedReplica } from "../replication/seed.ts";
import { SwitchoverError, switchover } from "../replication/switchover.ts";
import {
  preparePrimary,
  primaryHasHistoryFor,
  readReplica,
  readServer,
  serverVariables,
  setServerId,
  startReplica,
  stopReplica,
  type ServerState,
} from "../replication/server.ts";
import { backupGate } from "./backups.ts";
import { POD_CONFIG_HASH_ANNOTATION, RUNTIME_SETTINGS_ANNOTATION, decideConfig, type RunningServer } from "./runtime-config.ts";
import { checkGeneratedSecret, checkOwnedNames } from "./ownership.ts";
import { ReplicaSeeding, seedingCondition, type SeedView } from "./seeding.ts";
import { STORAGE_CONDITION, growVolumes } from "./volumes.ts";
import { planRollout, type RolloutMember } from "./rollout.ts";
import { MEMBER_READY_CONDITION, MYSQL_PORT, ROLE_LABEL, clusterNames, ordinalOf, podHost, podName, selectorLabels, selectorString } from "../resources/names.ts";
import {
  MY_CNF_KEY,
  configHash,
  configMap,
  generatedSecret,
  headlessService,
  podDisruptionBudget,
  primaryService,
  publishedInstance,
  readOnlyService,
  rootSecretRef,
  statefulSet,
} from "../resources/objects.ts";
import { compareQuantity } from "../resources/quantity.ts";

const RT = MySQLClusterKind.resource;
/** While something is converging. */
const CONVERGING_REQUEUE_MS = 5_000;
/** A converged cluster is looked at again this often, to keep replication state in status fresh. */
const STEADY_REQUEUE_MS = 30_000;

export interface ClusterReconcilerDeps {
  client: KubeClient;
  cache: Cache;
  events: EventRecorder;
  connector: MySQLConnector;
  secrets: SecretReader;
  addresses: ServerAddressResolver;
  /** Where seeds run: outside the reconcile (controllers/seeding.ts). */
  tasks: BackgroundTasks;
  /** The label of the manager's `--target`, copied from the cluster to the MySQLInstance it publishes. */
  targetLabel?: string;
}

interface Pod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

interface StatefulSetObject extends KubeObject {
  status?: { updateRevision?: string; observedGeneration?: number };
  spec?: { replicas?: number; volumeClaimTemplates?: { apiVersion?: string; kind?: string; metadata?: { name?: string; labels?: Record<string, string> }; spec?: { resources?: { requests?: { storage?: string } } } }[] };
}

/** What the rollout step contributes to the status. */
interface RolloutOutcome {
  fields: Partial<MySQLClusterStatus>;
  condition: Omit<ConditionUpdate, "observedGeneration">;
  /** A rollout step is under way (phase Upgrading). */
  rolling: boolean;
  requeueAfter?: number;
}

/** The label the StatefulSet controller puts on each pod: the revision of the template it was made from. */
const REVISION_LABEL = "controller-revision-hash";
/** How long a switchover waits for the candidate to apply the old primary's last transactions. */
const SWITCHOVER_CATCH_UP_MS = 30_000;

/** A member as observed in this reconcile. */
interface Observed {
  ordinal: number;
  pod: Pod;
  status: MemberStatus;
}

/** A problem the user must fix before the operator can go on: status, an Event, no retry until the object changes. */
class ClusterProblem extends Error {
  readonly reason: string;
  readonly phase: "Pending" | "Failed";
  constructor(phase: "Pending" | "Failed", reason: string, message: string) {
    super(message);
    this.phase = phase;
    this.reason = reason;
  }
}

export class ClusterReconciler implements Reconciler {
  private readonly d: ClusterReconcilerDeps;
  /** Config already checked against the server, per cluster uid: the check runs once per change. */
  private readonly checkedConfig = new Map<string, string>();
  private readonly seeding: ReplicaSeeding;

  constructor(deps: ClusterReconcilerDeps) {
    this.d = deps;
    this.seeding = new ReplicaSeeding(deps.tasks);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const cluster = this.d.cache.get<MySQLCluster>(RT, ns, req.name);
    if (!cluster) {
      // Owned objects go with the cluster (garbage collection); close the pools of its pods.
      await this.seeding.forget(ns, req.name);
      for (let ordinal = 0; ordinal < 16; ordinal++) this.d.connector.forget(ns, memberPoolName(req.name, ordinal));
      return undefined;
    }
    if (cluster.metadata.deletionTimestamp) return undefined;
    try {
      return await this.converge(cluster, ctx);
    } catch (caught) {
      // Another object holds one of the cluster's names: nothing was taken over; waits until the name is free.
      const err = caught instanceof NameConflictError ? new ClusterProblem("Pending", "NameConflict", caught.message) : caught;
      if (!(err instanceof ClusterProblem)) throw err;
      ctx.log.info("cluster cannot converge", { reason: err.reason, message: err.message });
      await this.d.events.record(cluster, "Warning", err.reason, err.message);
      await writeStatus(this.d.client, RT, cluster, { phase: err.phase }, { status: "False", reason: err.reason, message: err.message });
      // A Pending cluster waits for a Secret (watched); a Failed one for an edit of the cluster.
      if (err.phase === "Pending") return { requeueAfter: STEADY_REQUEUE_MS };
      throw new TerminalError(err.message);
    }
  }

  private async converge(cluster: MySQLCluster, ctx: ReconcileContext): Promise<Result> {
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const names = clusterNames(name);
    const desired = cluster.spec.replicas ?? 3;
    const flavor: Flavor = cluster.status?.flavor ?? flavorOfImage(cluster.spec.image ?? "mariadb:11.4");

    // 0. Names: an object of another owner under one of them stops everything.
    checkOwnedNames(this.d.cache, cluster);

    // 1. Secrets.
    const replicationPassword = await this.ensureSecrets(cluster, ctx);

    // 3a. Storage: a shrink is refused; a growth expands the claims, then replaces the
    //     StatefulSet (its claim template cannot change) — see volumes.ts.
    const liveSts = this.d.cache.get<StatefulSetObject>(builtin.statefulSet, ns, names.statefulSet);
    const liveTemplates = liveSts?.spec?.volumeClaimTemplates;
    const liveSize = liveTemplates?.find((t) => t.metadata?.name === "data")?.spec?.resources?.requests?.storage;
    if (liveSize !== undefined && compareQuantity(cluster.spec.storage.size, liveSize) < 0) {
      throw new ClusterProblem("Failed", "StorageShrink", `storage.size ${cluster.spec.storage.size} is smaller than the volumes' ${liveSize}; volumes cannot shrink: set it back to at least ${liveSize}`);
    }
    const storage = await growVolumes(this.d, cluster, liveSize, liveSts?.metadata.deletionTimestamp !== undefined);

    // Pods and the primary: the one on record; without one, chosen from the servers' histories
    // (replication/primary-selection.ts) — never assumed to be ordinal 0.
    const pods = this.pods(cluster);
    const current = liveSts?.spec?.replicas ?? 0;
    const primaryOrdinal = ordinalOf(name, cluster.status?.currentPrimary ?? "");
    let unknownPrimary: Extract<Selection, { kind: "unknown" }> | undefined;
    if (primaryOrdinal === undefined) {
      const selection = await this.selectPrimary(cluster, pods, Math.max(desired, current), flavor);
      if (selection.kind === "chosen") {
        const pName = podName(name, selection.ordinal);
        // On record before it is made writable: every later reconcile starts from it.
        await this.recordStatus(cluster, { currentPrimary: pName }, (s) => s.currentPrimary === pName);
        ctx.log.info("primary chosen", { pod: pName, why: selection.why });
        await this.d.events.record(cluster, "Normal", "PrimarySelected", `${pName} is the primary: ${selection.why}`);
        // Everything goes on from the recorded primary (and a status of the current version).
        return { requeueAfter: 100 };
      }
      unknownPrimary = selection;
    }
    const primaryPod = primaryOrdinal === undefined ? undefined : pods.get(primaryOrdinal);
    let primary: InstanceConnection | undefined;
    let primaryError: string | undefined;
    if (primaryPod && primaryOrdinal !== undefined) {
      try {
        primary = await connectMember(this.d.connector, cluster, primaryOrdinal, primaryPod.metadata.uid ?? "");
      } catch (err) {
        primaryError = memberError(err);
      }
    }

    // 2. Config, checked against the server before it is applied.
    if (primary) await this.checkConfig(cluster, primary);

    // 3b. Owned objects.
    // How a config change reaches the servers: at runtime when they can take it, else by a rollout (runtime-config.ts).
    const cm = configMap(cluster, primary?.server.flavor ?? flavor) as KubeObject & { data: Record<string, string> };
    const config = await decideConfig(
      this.d,
      cluster,
      primary?.server.flavor ?? flavor,
      { cnf: cm.data[MY_CNF_KEY] ?? "", hash: configHash(cm) },
      this.d.cache.get(builtin.configMap, ns, names.configMap),
      () => this.runningServers(cluster, pods, liveSts?.spec?.replicas ?? 0),
      ctx,
    );
    cm.metadata.annotations = { ...cm.metadata.annotations, [POD_CONFIG_HASH_ANNOTATION]: config.podHash, [RUNTIME_SETTINGS_ANNOTATION]: JSON.stringify(config.runtime) };
    await this.apply(builtin.configMap, cm);
    await this.apply(builtin.service, headlessService(cluster));
    await this.apply(builtin.service, primaryService(cluster));
    await this.apply(builtin.service, readOnlyService(cluster));
    await this.apply(builtin.podDisruptionBudget, podDisruptionBudget(cluster));
    await this.apply(MySQLInstanceKind.resource, publishedInstance(cluster, this.d.targetLabel));

    // 4. Scale in: stop replication on the leaving ordinals first. When the primary would
    //    leave, nothing shrinks until a switchover (below) moved it to a staying replica.
    //    With no primary known, nothing shrinks: a leaving server may be the one with the newest writes.
    const primaryLeaving = primaryOrdinal !== undefined && desired <= primaryOrdinal && current > desired;
    const stsReplicas = primaryLeaving || (primaryOrdinal === undefined && current > desired) ? current : desired;
    for (let ordinal = current - 1; ordinal >= stsReplicas; ordinal--) {
      const pod = pods.get(ordinal);
      if (pod) await this.retire(cluster, ordinal, pod, ctx);
    }
    const stsChanged =
      storage.replacingStatefulSet ||
      (await this.apply(
        builtin.statefulSet,
        statefulSet(cluster, {
          flavor: primary?.server.flavor ?? flavor,
          replicas: stsReplicas,
          configHash: config.podHash,
          ...(liveTemplates ? { liveClaimTemplates: liveTemplates.map((t) => ({ apiVersion: t.apiVersion ?? "v1", kind: t.kind ?? "PersistentVolumeClaim", metadata: { name: t.metadata?.name, labels: t.metadata?.labels }, spec: t.spec })) } : {}),
        }),
      ));

    if (primaryOrdinal === undefined) return this.awaitPrimary(cluster, pods, unknownPrimary!, ctx);

    // 5. Members.
    const members: Observed[] = [];
    let primaryState: ServerState | undefined;
    if (primaryPod) {
      const status: MemberStatus = { name: podName(name, primaryOrdinal), role: "primary", ready: false };
      if (primary) {
        try {
          primaryState = await this.preparePrimary(cluster, primary, primaryOrdinal, replicationPassword, ctx);
          status.ready = !primaryState.readOnly;
          status.gtidExecuted = primaryState.gtidExecuted;
        } catch (err) {
          status.message = memberError(err);
        }
      } else {
        status.message = primaryError ?? "the server is not reachable yet";
      }
      members.push({ ordinal: primaryOrdinal, pod: primaryPod, status });
    }
    const seeds: SeedView[] = [];
    for (const [ordinal, pod] of [...pods].sort(([a], [b]) => a - b)) {
      if (ordinal === primaryOrdinal || ordinal >= stsReplicas) continue;
      const status: MemberStatus = { name: podName(name, ordinal), role: "replica", ready: false };
      members.push({ ordinal, pod, status });
      if (!primary || !primaryState) {
        status.message = "waiting for the primary";
        continue;
      }
      try {
        const seed = await this.convergeReplica(cluster, primary, primaryOrdinal, primaryState, ordinal, pod, replicationPassword, status, ctx);
        if (seed) seeds.push(seed);
      } catch (err) {
        if (err instanceof SeedError) status.message = `seeding failed: ${err.message}`;
        else status.message = memberError(err);
      }
    }
    members.sort((a, b) => a.ordinal - b.ordinal);

    // 6. Pods: role label and readiness gate.
    for (const m of members) await this.updatePod(m, ns);

    // 7. One step of a rolling update — or, first of all, the switchover a scale-in needs.
    // (Right after the StatefulSet changed, the cache still has the old one: its revisions say nothing yet.)
    const rollout = primaryLeaving
      ? await this.moveOffLeavingPrimary(cluster, members, primaryOrdinal, desired, replicationPassword, ctx)
      : await this.rollout(cluster, stsChanged ? undefined : liveSts, members, desired, replicationPassword, ctx);
    if (rollout.fields.currentPrimary !== undefined && rollout.fields.currentPrimary !== cluster.status?.currentPrimary) {
      // Switched over: the status was written already; everything is looked at again from the new primary.
      return { requeueAfter: 100 };
    }

    // 8. Status.
    const seeding = seedingCondition(seeds, findCondition(cluster.status?.conditions, "Seeding"));
    return this.report(cluster, members, desired, primary, rollout, [storage.condition, seeding], ctx);
  }

  /**
   * The primary when status names none (a cluster re-created on retained
   * volumes, restored without status): spec.primary when set, else the server
   * whose history contains every other's. Ordinals up to `members`; one with
   * neither pod nor volume never held data.
   */
  private async selectPrimary(cluster: MySQLCluster, pods: Map<number, Pod>, members: number, flavor: Flavor): Promise<Selection> {
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    if (cluster.spec.primary !== undefined) return { kind: "chosen", ordinal: cluster.spec.primary, why: "spec.primary names it" };
    const candidates: Candidate[] = [];
    // The volumes of the cluster's servers (a list: the operator may list claims, not get them one by one).
    const claims = new Set((await this.d.client.list(builtin.persistentVolumeClaim, { namespace: ns, labelSelector: selectorString(name) })).items.map((c) => c.metadata.name ?? ""));
    for (let ordinal = 0; ordinal < Math.max(members, 1); ordinal++) {
      const pod = pods.get(ordinal);
      if (!pod) {
        const claimed = claims.has(`data-${podName(name, ordinal)}`);
        candidates.push(claimed ? { ordinal, kind: "unreachable", why: "its volume exists but its pod does not yet" } : { ordinal, kind: "absent" });
        continue;
      }
      try {
        const conn = await connectMember(this.d.connector, cluster, ordinal, pod.metadata.uid ?? "");
        const state = await readServer(conn);
        const replica = await readReplica(conn);
        candidates.push({ ordinal, kind: "reachable", history: state.history, replica: replica.configured });
      } catch (err) {
        candidates.push({ ordinal, kind: "unreachable", why: memberError(err) });
      }
    }
    return choosePrimary(flavor, candidates, (o) => podName(name, o));
  }

  /**
   * No primary can be chosen yet: nothing is made writable. Pods whose server
   * answers get the readiness gate (and no role label, so no Service selects
   * them): with OrderedReady the StatefulSet creates the next pod only once
   * this one is Ready, and every server must answer before they are compared.
   */
  private async awaitPrimary(cluster: MySQLCluster, pods: Map<number, Pod>, selection: Extract<Selection, { kind: "unknown" }>, ctx: ReconcileContext): Promise<Result> {
    const ns = cluster.metadata.namespace ?? "";
    for (const [ordinal, pod] of pods) {
      const answers = await connectMember(this.d.connector, cluster, ordinal, pod.metadata.uid ?? "").then(
        () => true,
        (err: unknown) => (memberError(err), false),
      );
      const want = answers ? "True" : "False";
      if (pod.status?.conditions?.find((c) => c.type === MEMBER_READY_CONDITION)?.status === want) continue;
      const condition = { type: MEMBER_READY_CONDITION, status: want, reason: "AwaitingPrimary", message: selection.message, lastTransitionTime: new Date().toISOString() };
      await this.d.client.patch(builtin.pod, ns, pod.metadata.name ?? "", { status: { conditions: [condition] } }, "strategic", "status").catch(ignoreNotFound);
    }
    const previous = findCondition(cluster.status?.conditions, "Available");
    // Diverged servers need the user; servers still starting do not (and say so in the condition only).
    if (selection.reason === "Diverged" && previous?.message !== selection.message) {
      ctx.log.info("no primary can be chosen", { reason: selection.reason });
      await this.d.events.record(cluster, "Warning", "PrimaryUnknown", selection.message);
    }
    const phase = cluster.status?.phase === "Running" || cluster.status?.phase === "Degraded" ? "Degraded" : "Provisioning";
    await writeStatus(this.d.client, RT, cluster, { phase }, { status: "False", reason: "PrimaryUnknown", message: selection.message }, [
      { type: "Available", status: "False", reason: "PrimaryUnknown", message: selection.message },
    ]);
    return { requeueAfter: selection.reason === "Diverged" ? STEADY_REQUEUE_MS : CONVERGING_REQUEUE_MS };
  }

  /** Every current server, connected; undefined when a pod is missing or a server does not answer. */
  private async runningServers(cluster: MySQLCluster, pods: Map<number, Pod>, current: number): Promise<RunningServer[] | undefined> {
    const name = cluster.metadata.name ?? "";
    const servers: RunningServer[] = [];
    for (let ordinal = 0; ordinal < current; ordinal++) {
      const pod = pods.get(ordinal);
      if (!pod) return undefined;
      try {
        servers.push({ name: podName(name, ordinal), conn: await connectMember(this.d.connector, cluster, ordinal, pod.metadata.uid ?? "") });
      } catch (err) {
        memberError(err);
        return undefined;
      }
    }
    return servers.length > 0 ? servers : undefined;
  }

  /** The cluster's pods by ordinal (from the cache, which watches this namespace's pods). */
  private pods(cluster: MySQLCluster): Map<number, Pod> {
    const name = cluster.metadata.name ?? "";
    const selector = selectorLabels(name);
    const out = new Map<number, Pod>();
    for (const pod of this.d.cache.list<Pod>(builtin.pod, { namespace: cluster.metadata.namespace })) {
      const labels = pod.metadata.labels ?? {};
      if (!Object.entries(selector).every(([k, v]) => labels[k] === v) || pod.metadata.deletionTimestamp) continue;
      const ordinal = ordinalOf(name, pod.metadata.name ?? "");
      if (ordinal !== undefined) out.set(ordinal, pod);
    }
    return out;
  }

  /** Applies `desired` unless the cached object matches it; true when it wrote. */
  private async apply(rt: Parameters<typeof applyIfChanged>[1], desired: KubeObject): Promise<boolean> {
    const live = this.d.cache.get(rt, desired.metadata.namespace, desired.metadata.name ?? "");
    return applyIfChanged(this.d.client, rt, desired, live);
  }

  /** The generated Secrets exist (created once, never overwritten); returns the replication password. */
  private async ensureSecrets(cluster: MySQLCluster, ctx: ReconcileContext): Promise<string> {
    const ns = cluster.metadata.namespace ?? "";
    const names = clusterNames(cluster.metadata.name ?? "");
    const root = rootSecretRef(cluster);
    if (cluster.spec.rootPasswordSecretRef) {
      const secret = await this.d.secrets.read(ns, root.name);
      if (!secret) throw new ClusterProblem("Pending", "SecretNotFound", `root password Secret ${root.name} not found in namespace ${ns}; create it with keys username (root) and ${root.key}`);
      try {
        secretValue(secret, root.key);
        if (secretValue(secret, "username") !== "root") throw new MissingSecretError("SecretKeyMissing", `Secret ${root.name} must have username: root (the published MySQLInstance logs in with it)`);
      } catch (err) {
        if (err instanceof MissingSecretError) throw new ClusterProblem("Pending", err.reason, `${err.message}; the root password Secret needs keys username (root) and ${root.key}`);
        throw err;
      }
    } else {
      await this.ensureGenerated(cluster, root.name, () => ({ username: "root", password: newPassword() }), ctx);
    }
    const replication = await this.ensureGenerated(cluster, names.replicationSecret, () => ({ username: "replication", password: newPassword() }), ctx);
    return secretValue(replication, "password");
  }

  private async ensureGenerated(cluster: MySQLCluster, name: string, generate: () => Record<string, string>, ctx: ReconcileContext) {
    const ns = cluster.metadata.namespace ?? "";
    const existing = await this.d.secrets.read(ns, name);
    const wanted = generatedSecret(cluster, name, {});
    if (existing) {
      checkGeneratedSecret(existing, cluster);
      // Never overwritten; only whether it goes with the cluster follows secretDeletionPolicy.
      const owned = (existing.metadata.ownerReferences ?? []).some((o) => o.uid === cluster.metadata.uid);
      const shouldOwn = (wanted.metadata.ownerReferences ?? []).length > 0;
      if (owned !== shouldOwn && existing.metadata.labels?.["app.kubernetes.io/managed-by"] === "stateward") {
        const others = (existing.metadata.ownerReferences ?? []).filter((o) => o.uid !== cluster.metadata.uid);
        await this.d.client.patch(builtin.secret, ns, name, { metadata: { ownerReferences: shouldOwn ? [...others, ...(wanted.metadata.ownerReferences ?? [])] : others, resourceVersion: existing.metadata.resourceVersion } });
      }
      return existing;
    }
    try {
      await this.d.client.create(builtin.secret, generatedSecret(cluster, name, generate()));
      ctx.log.info("generated a Secret", { secret: name });
      await this.d.events.record(cluster, "Normal", "SecretGenerated", `Generated Secret ${name}`);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const created = await this.d.secrets.read(ns, name);
    if (!created) throw new Error(`Secret ${name} vanished right after it was created`);
    checkGeneratedSecret(created, cluster); // someone else's, made between the look-up and the create
    return created;
  }

  private async checkConfig(cluster: MySQLCluster, primary: InstanceConnection): Promise<void> {
    const config = cluster.spec.config ?? {};
    const key = JSON.stringify(config);
    const uid = cluster.metadata.uid ?? "";
    if (this.checkedConfig.get(uid) === key) return;
    if (Object.keys(config).length > 0) {
      const unknown = unknownSettings(config, await serverVariables(primary));
      if (unknown.length > 0) {
        throw new ClusterProblem(
          "Failed",
          "InvalidConfig",
          `config holds settings the server (${primary.server.flavor} ${primary.server.version}) does not know: ${unknown.join(", ")}; nothing was applied. Fix or remove them (or prefix with loose- to pass them anyway)`,
        );
      }
    }
    this.checkedConfig.set(uid, key);
  }

  private async preparePrimary(cluster: MySQLCluster, conn: InstanceConnection, ordinal: number, replicationPassword: string, ctx: ReconcileContext): Promise<ServerState> {
    let state = await readServer(conn);
    if (state.serverId !== SERVER_ID_BASE + ordinal) await setServerId(conn, SERVER_ID_BASE + ordinal);
    const done = await preparePrimary(conn, state, replicationPassword);
    if (done.length > 0) {
      ctx.log.info("primary prepared", { pod: podName(cluster.metadata.name ?? "", ordinal), done });
      await this.d.events.record(cluster, "Normal", "PrimaryConfigured", `${podName(cluster.metadata.name ?? "", ordinal)} is the primary: ${done.join(", ")}`);
      state = await readServer(conn);
    }
    return state;
  }

  private async convergeReplica(
    cluster: MySQLCluster,
    primary: InstanceConnection,
    primaryOrdinal: number,
    primaryState: ServerState,
    ordinal: number,
    pod: Pod,
    replicationPassword: string,
    status: MemberStatus,
    ctx: ReconcileContext,
  ): Promise<SeedView | undefined> {
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const pName = podName(name, ordinal);
    const conn = await connectMember(this.d.connector, cluster, ordinal, pod.metadata.uid ?? "");
    const source = await replicationSource(this.d.addresses, { host: podHost(name, ns, primaryOrdinal), port: MYSQL_PORT });
    let replica = await readReplica(conn);
    // A seed under way holds the replica (its copy is half there): nothing else is done to it.
    const seeding = this.seeding.running(ns, name, pName);
    if (seeding) {
      status.message = `seeding: copying the primary's data (since ${seeding.since.toISOString()})`;
      return seeding;
    }
    if (!replica.configured || replica.sourceHost !== source.host || replica.sourcePort !== source.port) {
      const state = await readServer(conn);
      if (!(await primaryHasHistoryFor(primary, state.gtidExecuted))) {
        if (state.userDatabases > 0) {
          status.message = "the primary no longer has the binary logs this server needs, and the server holds data, so it cannot be seeded; delete its volume to have it seeded from scratch";
          return undefined;
        }
        // In the background (controllers/seeding.ts); the replica is set up by a reconcile after it is done.
        const primaryName = podName(name, primaryOrdinal);
        const view = this.seeding.ensure(
          ns,
          name,
          pName,
          async (signal) => {
            await this.d.events.record(cluster, "Normal", "SeedingReplica", `Copying the primary's data into ${pName}: the primary no longer has all the binary logs it needs`);
            return seedReplica(primary, conn, { signal });
          },
          (err) => {
            if (err instanceof SeedBusyError) return { message: err.message, busy: true };
            if (err instanceof SeedError) return { message: err.message, busy: false };
            if (err instanceof MySQLError) return { message: `${err.message} (the copy was removed)`, busy: false };
            if (err instanceof Error && err.name === "AbortError") return { message: "stopped: the manager is shutting down", busy: false };
            return { message: err instanceof Error ? err.message : String(err), busy: false };
          },
          {
            succeeded: async (seeded) => {
              ctx.log.info("replica seeded", { pod: pName, databases: seeded.databases, tables: seeded.tables, rows: seeded.rows });
              await this.d.events.record(cluster, "Normal", "ReplicaSeeded", `Seeded ${pName}: ${seeded.databases} databases, ${seeded.tables} tables, ${seeded.rows} rows, at GTID ${seeded.position}`);
            },
            failed: async (message, busy, failures, retryInMs) => {
              ctx.log.info("seeding did not complete", { pod: pName, busy, failures, retryInMs });
              await this.d.events.record(
                cluster,
                "Warning",
                busy ? "SeedingPutOff" : "SeedFailed",
                `Seeding ${pName} from ${primaryName} ${busy ? "put off" : "failed"} (attempt ${failures}): ${message}; next attempt in ${Math.round(retryInMs / 1000)} s`,
              );
            },
          },
        );
        status.message =
          view.kind === "running"
            ? `seeding: copying the primary's data (since ${view.since.toISOString()})`
            : `seeding ${view.busy ? "put off" : "failed"} (attempt ${view.failures}): ${view.lastError}; next attempt at ${view.nextAttempt.toISOString()}`;
        return view;
      }
      if (state.serverId !== SERVER_ID_BASE + ordinal) await setServerId(conn, SERVER_ID_BASE + ordinal);
      await startReplica(conn, source, replicationPassword);
      ctx.log.info("replication configured", { pod: pName, source: podName(name, primaryOrdinal) });
      await this.d.events.record(cluster, "Normal", "ReplicationConfigured", `${pName} replicates from ${podName(name, primaryOrdinal)}`);
      replica = await readReplica(conn);
    }
    const state = await readServer(conn);
    const maxLag = cluster.spec.updateStrategy?.maxLagSeconds ?? 30;
    status.ioThread = replica.ioRunning;
    status.sqlThread = replica.sqlRunning;
    if (replica.lagSeconds !== undefined && Number.isFinite(replica.lagSeconds)) status.lagSeconds = replica.lagSeconds;
    status.gtidExecuted = state.gtidExecuted;
    const caughtUp = gtidContains(primary.server.flavor, state.gtidExecuted, primaryState.gtidExecuted);
    status.ready = replica.ioRunning && replica.sqlRunning && (replica.lagSeconds ?? 0) <= maxLag && caughtUp;
    if (!status.ready) {
      status.message = replica.lastError
        ? `replication error: ${replica.lastError}`
        : !replica.ioRunning || !replica.sqlRunning
          ? `replication threads not running (I/O ${replica.ioRunning ? "on" : "off"}, SQL ${replica.sqlRunning ? "on" : "off"})`
          : `catching up (${replica.lagSeconds ?? "?"} s behind)`;
    }
    return undefined;
  }

  /** A replica leaving with scale-in: replication stopped and forgotten; a server already gone is fine. */
  private async retire(cluster: MySQLCluster, ordinal: number, pod: Pod, ctx: ReconcileContext): Promise<void> {
    const pName = podName(cluster.metadata.name ?? "", ordinal);
    try {
      const conn = await connectMember(this.d.connector, cluster, ordinal, pod.metadata.uid ?? "");
      await stopReplica(conn);
      ctx.log.info("replication stopped for scale-in", { pod: pName });
      await this.d.events.record(cluster, "Normal", "ReplicaRemoved", `Stopped replication on ${pName}; removing it (its volume is kept)`);
    } catch (err) {
      ctx.log.info("could not stop replication on a leaving server; removing it anyway", { pod: pName, error: memberError(err) });
      await this.d.events.record(cluster, "Warning", "ReplicaRemoved", `Removing ${pName} without stopping its replication: ${memberError(err)}`);
    }
    this.d.connector.forget(cluster.metadata.namespace ?? "", memberPoolName(cluster.metadata.name ?? "", ordinal));
  }

  private async updatePod(m: Observed, ns: string): Promise<void> {
    const name = m.pod.metadata.name ?? "";
    if (m.pod.metadata.labels?.[ROLE_LABEL] !== m.status.role) {
      await this.d.client.patch(builtin.pod, ns, name, { metadata: { labels: { [ROLE_LABEL]: m.status.role } } }).catch(ignoreNotFound);
    }
    const want = m.status.ready ? "True" : "False";
    const gate = m.pod.status?.conditions?.find((c) => c.type === MEMBER_READY_CONDITION);
    if (gate?.status !== want) {
      const condition = {
        type: MEMBER_READY_CONDITION,
        status: want,
        reason: m.status.ready ? (m.status.role === "primary" ? "Writable" : "CaughtUp") : "NotReady",
        message: m.status.message ?? "",
        lastTransitionTime: new Date().toISOString(),
      };
      await this.d.client.patch(builtin.pod, ns, name, { status: { conditions: [condition] } }, "strategic", "status").catch(ignoreNotFound);
    }
  }

  /** Decides and takes one step of a rolling update (see rollout.ts). */
  private async rollout(cluster: MySQLCluster, sts: StatefulSetObject | undefined, members: Observed[], desired: number, replicationPassword: string, ctx: ReconcileContext): Promise<RolloutOutcome> {
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const image = cluster.spec.image ?? "mariadb:11.4";
    const revision = sts?.status?.updateRevision;
    if (!sts || !revision || (sts.status?.observedGeneration ?? 0) < (sts.metadata.generation ?? 0)) {
      return {
        fields: { targetImage: image },
        condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: "waiting for the StatefulSet controller to take the current template" },
        rolling: true,
        requeueAfter: 1_000,
      };
    }
    const flavor = cluster.status?.flavor ?? flavorOfImage(image);
    const view: RolloutMember[] = members.map((m) => ({
      ordinal: m.ordinal,
      name: m.status.name,
      role: m.status.role,
      ready: m.status.ready,
      updated: m.pod.metadata.labels?.[REVISION_LABEL] === revision,
      progress: m.status.gtidExecuted ? gtidCount(flavor, m.status.gtidExecuted) : 0n,
    }));
    const updated = view.filter((m) => m.updated).length;
    const fields: Partial<MySQLClusterStatus> = { targetImage: image, updatedReplicas: updated, updated: `${updated}/${desired}` };
    const strategy = cluster.spec.updateStrategy ?? {};
    const decision = planRollout({
      members: view,
      desired,
      requestedPrimary: cluster.spec.primary,
      inProgress: cluster.status?.rollout,
      paused: strategy.paused ?? false,
      healthGateSeconds: strategy.healthGateSeconds ?? 300,
      now: new Date(),
    });
    const previous = findCondition(cluster.status?.conditions, "Upgrading");
    if (decision.kind === "restart" || decision.kind === "switchover") {
      // No pod restarts and no switchover while a backup of the cluster runs; backupBeforeUpgrade first.
      const gate = await backupGate(this.d.client, cluster, revision, updated < view.length, this.d.targetLabel);
      if (gate.kind === "wait") {
        if (previous?.reason !== gate.reason) await this.d.events.record(cluster, "Normal", gate.reason, gate.message);
        return { fields, condition: { type: "Upgrading", status: "True", reason: gate.reason, message: gate.message }, rolling: true, requeueAfter: 2_000 };
      }
      if (gate.kind === "failed") {
        if (previous?.reason !== "BackupFailed") await this.d.events.record(cluster, "Warning", "BackupFailed", gate.message);
        return { fields, condition: { type: "Upgrading", status: "False", reason: "BackupFailed", message: gate.message }, rolling: false, requeueAfter: STEADY_REQUEUE_MS };
      }
    }
    switch (decision.kind) {
      case "complete": {
        if (cluster.status?.rollout || (cluster.status?.currentImage !== undefined && cluster.status.currentImage !== image)) {
          await this.d.events.record(cluster, "Normal", "RolloutComplete", `All ${desired} servers run the current template (image ${image})`);
        }
        return { fields: { ...fields, currentImage: image, rollout: undefined }, condition: { type: "Upgrading", status: "False", reason: "UpToDate", message: `all ${desired} servers run the current template (image ${image})` }, rolling: false };
      }
      case "wait":
        return { fields, condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: decision.message }, rolling: true, requeueAfter: 2_000 };
      case "blocked": {
        if (previous?.reason !== decision.reason) {
          ctx.log.info("rollout stopped", { reason: decision.reason, pod: decision.pod });
          await this.d.events.record(cluster, decision.reason === "Paused" ? "Normal" : "Warning", decision.reason, decision.message);
        }
        return { fields, condition: { type: "Upgrading", status: "False", reason: decision.reason, message: decision.message }, rolling: false, requeueAfter: decision.reason === "Paused" ? STEADY_REQUEUE_MS : CONVERGING_REQUEUE_MS };
      }
      case "restart": {
        ctx.log.info("restarting a pod for the rollout", { pod: decision.pod, role: decision.role, revision });
        // On record before the pod goes: the health gate counts from here, whatever happens next.
        const inProgress = { pod: decision.pod, startedAt: new Date().toISOString() };
        await this.recordStatus(cluster, { rollout: inProgress }, (s) => s.rollout?.startedAt === inProgress.startedAt);
        await this.d.events.record(cluster, "Normal", "PodRestarted", `Restarting ${decision.pod} (${decision.role}) to apply revision ${revision}; ${updated}/${desired} updated`);
        await this.d.client.delete(builtin.pod, ns, decision.pod).catch(ignoreNotFound);
        this.d.connector.forget(ns, memberPoolName(name, decision.ordinal));
        return {
          fields: { ...fields, rollout: inProgress },
          condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: `restarting ${decision.pod} (${decision.role}); ${updated}/${desired} updated` },
          rolling: true,
          requeueAfter: 2_000,
        };
      }
      case "switchover":
        return this.switchTo(cluster, members, decision.from, decision.to, replicationPassword, fields, ctx);
    }
  }

  /** Scaling in would remove the primary: it moves to the most caught-up Ready replica that stays. */
  private async moveOffLeavingPrimary(cluster: MySQLCluster, members: Observed[], primaryOrdinal: number, desired: number, replicationPassword: string, ctx: ReconcileContext): Promise<RolloutOutcome> {
    const flavor = cluster.status?.flavor ?? flavorOfImage(cluster.spec.image ?? "mariadb:11.4");
    const from = members.find((m) => m.ordinal === primaryOrdinal);
    const staying = members
      .filter((m) => m.ordinal < desired && m.status.role === "replica" && m.status.ready)
      .sort((a, b) => {
        const x = gtidCount(flavor, b.status.gtidExecuted ?? "");
        const y = gtidCount(flavor, a.status.gtidExecuted ?? "");
        return x > y ? 1 : x < y ? -1 : a.ordinal - b.ordinal;
      })[0];
    const message = `scaling in to ${desired} removes the primary ${podName(cluster.metadata.name ?? "", primaryOrdinal)}: switching over first`;
    if (!from || !staying) {
      return { fields: {}, condition: { type: "Upgrading", status: "True", reason: "SwitchoverForScaleIn", message: `${message}; waiting for a Ready replica among the servers that stay` }, rolling: true, requeueAfter: CONVERGING_REQUEUE_MS };
    }
    return this.switchTo(cluster, members, { ordinal: from.ordinal, name: from.status.name }, { ordinal: staying.ordinal, name: staying.status.name }, replicationPassword, {}, ctx);
  }

  /** A planned switchover (see replication/switchover.ts), then the role moved: status first, then labels, then the old primary follows. */
  private async switchTo(
    cluster: MySQLCluster,
    members: Observed[],
    from: { ordinal: number; name: string },
    to: { ordinal: number; name: string },
    replicationPassword: string,
    fields: Partial<MySQLClusterStatus>,
    ctx: ReconcileContext,
  ): Promise<RolloutOutcome> {
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const fromPod = members.find((m) => m.ordinal === from.ordinal)?.pod;
    const toPod = members.find((m) => m.ordinal === to.ordinal)?.pod;
    await this.d.events.record(cluster, "Normal", "SwitchoverStarted", `Switching the primary from ${from.name} to ${to.name}: ${from.name} is read-only until ${to.name} has applied all of its transactions`);
    try {
      const oldPrimary = await connectMember(this.d.connector, cluster, from.ordinal, fromPod?.metadata.uid ?? "");
      const candidate = await connectMember(this.d.connector, cluster, to.ordinal, toPod?.metadata.uid ?? "");
      const result = await switchover(oldPrimary, candidate, SWITCHOVER_CATCH_UP_MS, ctx.signal);
      // The new primary is on record before anything else: a restart from here on finds it.
      await this.recordStatus(cluster, { currentPrimary: to.name }, (s) => s.currentPrimary === to.name);
      await this.d.client.patch(builtin.pod, ns, to.name, { metadata: { labels: { [ROLE_LABEL]: "primary" } } }).catch(ignoreNotFound);
      await this.d.client.patch(builtin.pod, ns, from.name, { metadata: { labels: { [ROLE_LABEL]: "replica" } } }).catch(ignoreNotFound);
      const source = await replicationSource(this.d.addresses, { host: podHost(name, ns, to.ordinal), port: MYSQL_PORT });
      await startReplica(oldPrimary, source, replicationPassword);
      ctx.log.info("switched over", { from: from.name, to: to.name, readOnlyMs: result.readOnlyMs });
      await this.d.events.record(cluster, "Normal", "SwitchedOver", `${to.name} is the primary (was ${from.name}); writes were refused for ${result.readOnlyMs} ms; no transaction was left behind (GTID ${result.position})`);
      return { fields: { ...fields, currentPrimary: to.name }, condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: `switched over to ${to.name}` }, rolling: true };
    } catch (err) {
      if (!(err instanceof SwitchoverError) && !(err instanceof MySQLError)) throw err;
      await this.d.events.record(cluster, "Warning", "SwitchoverFailed", `Switching over from ${from.name} to ${to.name} failed: ${err.message}`);
      return { fields, condition: { type: "Upgrading", status: "False", reason: "SwitchoverFailed", message: `switching over to ${to.name} failed: ${err.message}; tried again in 30 s` }, rolling: false, requeueAfter: STEADY_REQUEUE_MS };
    }
  }

  /**
   * Writes a decision into status before acting on it (the new primary, the
   * pod about to restart), from a fresh read so a stale cache cannot make it
   * fail, and waits until the cache has it: no later reconcile acts without it.
   */
  private async recordStatus(cluster: MySQLCluster, fields: Partial<MySQLClusterStatus>, inCache: (s: MySQLClusterStatus) => boolean): Promise<void> {
    const ns = cluster.metadata.namespace ?? "";
    const name = cluster.metadata.name ?? "";
    for (let attempt = 0; ; attempt++) {
      const live = await this.d.client.get<MySQLCluster>(RT, ns, name);
      try {
        await this.d.client.updateStatus(RT, { ...live, status: { ...live.status, ...fields } });
        break;
      } catch (err) {
        if (attempt >= 5 || !isConflict(err)) throw err;
      }
    }
    const until = Date.now() + 10_000;
    while (!inCache(this.d.cache.get<MySQLCluster>(RT, ns, name)?.status ?? {}) && Date.now() < until) await sleep(20);
  }

  private async report(
    cluster: MySQLCluster,
    members: Observed[],
    desired: number,
    primary: InstanceConnection | undefined,
    rollout: RolloutOutcome,
    extra: (Omit<ConditionUpdate, "observedGeneration"> | undefined)[],
    ctx: ReconcileContext,
  ): Promise<Result> {
    const storage = extra.find((c) => c?.type === STORAGE_CONDITION);
    const name = cluster.metadata.name ?? "";
    const statuses = members.map((m) => m.status);
    const ready = statuses.filter((s) => s.ready).length;
    const primaryStatus = statuses.find((s) => s.role === "primary");
    const replicas = statuses.filter((s) => s.role === "replica");
    const phase: MySQLClusterStatus["phase"] =
      rollout.rolling && primaryStatus?.ready && members.length === desired
        ? "Upgrading"
        : ready === desired && members.length === desired
        ? "Running"
        : !primaryStatus?.ready
          ? cluster.status?.phase === "Running" || cluster.status?.phase === "Degraded" ? "Degraded" : "Provisioning"
          : members.length !== desired
            ? "Scaling"
            : "Degraded";
    const notReady = statuses.filter((s) => !s.ready).map((s) => `${s.name}: ${s.message ?? "not ready"}`);
    const missing = desired - members.length;
    const message =
      phase === "Running"
        ? `${ready}/${desired} servers ready; ${podName(name, ordinalOf(name, primaryStatus?.name ?? "") ?? 0)} is the primary`
        : [...notReady, ...(missing > 0 ? [`${missing} server(s) not created yet`] : [])].join("; ") || "converging";
    const others: Omit<ConditionUpdate, "observedGeneration">[] = [
      primaryStatus?.ready
        ? { type: "Available", status: "True", reason: "PrimaryWritable", message: `${primaryStatus.name} accepts writes` }
        : { type: "Available", status: "False", reason: "PrimaryUnavailable", message: primaryStatus ? `${primaryStatus.name}: ${primaryStatus.message ?? "not writable"}` : "the primary pod does not exist yet" },
      replicas.length === 0
        ? { type: "Replicating", status: "True", reason: "NoReplicas", message: "the cluster has no replicas" }
        : replicas.every((r) => r.ioThread && r.sqlThread)
          ? { type: "Replicating", status: "True", reason: "ReplicationRunning", message: `${replicas.length} replica(s) replicating` }
          : { type: "Replicating", status: "False", reason: "ReplicationStopped", message: replicas.filter((r) => !(r.ioThread && r.sqlThread)).map((r) => `${r.name}: ${r.message ?? "not replicating"}`).join("; ") },
      rollout.condition,
      ...extra.filter((c) => c !== undefined),
    ];
    const before = cluster.status?.phase;
    await writeStatus(
      this.d.client,
      RT,
      cluster,
      {
        phase,
        replicas: members.length,
        readyReplicas: ready,
        ready: `${ready}/${desired}`,
        selector: selectorString(name),
        ...(primaryStatus ? { currentPrimary: primaryStatus.name } : {}),
        ...(primary ? { flavor: primary.server.flavor, serverVersion: primary.server.version } : {}),
        members: statuses,
        ...rollout.fields,
      },
      phase === "Running" ? { status: "True", reason: "Running", message } : { status: "False", reason: phase ?? "Provisioning", message },
      others,
    );
    if (before !== phase) {
      ctx.log.info("cluster phase changed", { from: before, to: phase });
      if (phase === "Running") await this.d.events.record(cluster, "Normal", "Running", message);
    }
    // Volumes growing are looked at often; a refused expansion only at the steady pace (the StorageClass may be fixed meanwhile).
    const resizing = storage?.reason === "Expanding";
    return { requeueAfter: Math.min(rollout.requeueAfter ?? STEADY_REQUEUE_MS, phase === "Running" && !resizing ? STEADY_REQUEUE_MS : CONVERGING_REQUEUE_MS) };
  }
}

function newPassword(): string {
  // 24 bytes of randomness in URL-safe base64: no quoting trouble in any client.
  return randomBytes(24).toString("base64url");
}

function memberError(err: unknown): string {
  if (err instanceof MySQLError || err instanceof MissingSecretError) return err.message;
  throw err;
}

function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}
