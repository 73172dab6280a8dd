// MySQLCluster: level-based convergence of one cluster, in this order:
//
//   0. names        an object of another owner under one of the cluster's
//                   names (or a foreign generated-Secret name): Pending,
//                   NameConflict, nothing done (ownership.ts)
//   1. Secrets      the root and replication passwords (generated once when
//                   absent, never overwritten); a missing user Secret: Pending
//                   (secrets.ts)
//   2. config       the user's settings checked against the running primary's
//                   variables before anything is applied; unknown: Failed
//                   (config-check.ts); applied at runtime when every server
//                   can take them (runtime-config.ts), else by a rollout (7)
//   3. objects      ConfigMap, Services, PDB, MySQLInstance, StatefulSet —
//                   server-side applied, only when they differ (drift reverted;
//                   owned-objects.ts); a bigger storage.size grows the volumes
//                   first (volumes.ts)
//   4. scale in     replication stopped on the ordinals leaving, then the
//                   StatefulSet shrinks; the primary is never removed
//   4b. failover    a primary that does not answer is watched; once lost
//                   (detectionSeconds and a second signal) the most complete
//                   replica is promoted, or FailoverNeeded says why not
//                   (failover.ts)
//   5. members      the primary (chosen from the servers' histories when status
//                   names none: primary.ts) made writable with the replication
//                   account; each replica seeded when the primary lacks the
//                   binlogs it needs, pointed at the primary (GTID
//                   auto-position), and judged: Ready only when replicating and
//                   caught up (members.ts)
//   6. pods         the role label (the Services follow it) and the
//                   readiness-gate condition, when they differ (pods.ts)
//   7. rollout      one step of a rolling update (rollout.ts decides: restart
//                   a pod, switch over, wait, or stop at a health gate;
//                   rollout-step.ts takes it)
//   8. status       members, phase, conditions (status-report.ts); requeued
//                   while not converged, and every 30 s after to keep
//                   replication state fresh
import { NameConflictError, builtin, compareQuantity, findCondition, readyStatus, writeStatus, type KubeObject, type ReconcileContext, type Reconciler, type Request, type Result } from "@stateward/core";
import type { Flavor, InstanceConnection } from "@stateward/mysql";
import { DEFAULT_IMAGE, DEFAULT_REPLICAS, MySQLClusterKind, STEADY_REQUEUE_MS, type MySQLCluster } from "../api.ts";
import { flavorOfImage } from "../config/my-cnf.ts";
import { connectMember, memberPoolName } from "../replication/members.ts";
import type { Selection } from "../replication/primary-selection.ts";
import { clusterNames, ordinalOf, podName } from "../resources/names.ts";
import { MY_CNF_KEY, configHash, configMap } from "../resources/objects.ts";
import { ConfigCheck } from "./config-check.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import { SEMI_SYNC_CONDITION, reportSemiSyncChange, semiSyncCondition, semiSyncWish } from "./durability.ts";
import { ClusterMetrics } from "./metrics.ts";
import { FailoverWatch, errantCondition, failedOverCondition } from "./failover.ts";
import { convergeMembers, retire } from "./members.ts";
import { applyServingObjects, applyStatefulSet } from "./owned-objects.ts";
import { checkOwnedNames } from "./ownership.ts";
import { clusterPods, runningServers, updatePod, type StatefulSetObject } from "./pods.ts";
import { awaitPrimary, selectPrimary } from "./primary.ts";
import { ClusterProblem, memberError } from "./problems.ts";
import { DECISION_RECHECK_MS, RecordedDecisions } from "./recorded-decisions.ts";
import { moveOffLeavingPrimary, rolloutStep, type RolloutContext } from "./rollout-step.ts";
import { POD_CONFIG_HASH_ANNOTATION, RUNTIME_SETTINGS_ANNOTATION, decideConfig } from "./runtime-config.ts";
import { ReplicaSeeding, seedingCondition } from "./seeding.ts";
import { ensureSecrets } from "./secrets.ts";
import { statusReport } from "./status-report.ts";
import { growVolumes } from "./volumes.ts";

export type { ClusterReconcilerDeps } from "./deps.ts";

const RT = MySQLClusterKind.resource;
/** Pools of a deleted cluster's pods are closed up to this ordinal: beyond any cluster's size. */
const POOL_ORDINALS = 16;

export class ClusterReconciler implements Reconciler {
  private readonly d: ClusterReconcilerDeps;
  private readonly configCheck = new ConfigCheck();
  private readonly seeding: ReplicaSeeding;
  private readonly decisions: RecordedDecisions;
  private readonly failover: FailoverWatch;
  private readonly metrics: ClusterMetrics;

  constructor(deps: ClusterReconcilerDeps) {
    this.d = deps;
    this.seeding = new ReplicaSeeding(deps.tasks, () => deps.clock.now().getTime());
    this.decisions = new RecordedDecisions(deps.clock);
    this.failover = new FailoverWatch(deps.clock);
    this.metrics = new ClusterMetrics(deps.metrics);
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const ns = req.namespace ?? "";
    const cluster = this.d.cache.get<MySQLCluster>(RT, ns, req.name);
    if (!cluster) {
      // Owned objects go with the cluster (garbage collection); close the pools of its pods.
      await this.seeding.forget(ns, req.name);
      this.decisions.forget(ns, req.name);
      this.failover.forget(ns, req.name);
      this.metrics.forget(ns, req.name);
      for (let ordinal = 0; ordinal < POOL_ORDINALS; ordinal++) this.d.connector.forget(ns, memberPoolName(req.name, ordinal));
      return undefined;
    }
    if (cluster.metadata.deletionTimestamp) return undefined;
    // From the status the last reconcile wrote (its watch event brought this one).
    this.metrics.observe(cluster);
    // A decision just written (a primary, a restart) is acted on only from a cache that has it; its watch event brings the cluster back.
    if (this.decisions.unseen(cluster)) return { requeueAfter: DECISION_RECHECK_MS };
    try {
      return await this.converge(cluster, ctx);
    } catch (caught) {
      // Another object holds one of the cluster's names: nothing was taken over; waits until the name is free.
      const err = caught instanceof NameConflictError ? new ClusterProblem("Pending", "NameConflict", caught.message) : caught;
      if (!(err instanceof ClusterProblem)) throw err;
      ctx.log.info("cluster cannot converge", { reason: err.reason, message: err.message });
      await this.d.events.record(cluster, "Warning", err.reason, err.message);
      await writeStatus(this.d.client, RT, cluster, readyStatus({ phase: err.phase }, { status: "False", reason: err.reason, message: err.message }));
      // A Pending cluster waits for a Secret (watched); a Failed one for an edit of the cluster.
      if (err.phase === "Pending") return { requeueAfter: STEADY_REQUEUE_MS };
      throw err;
    }
  }

  private async converge(cluster: MySQLCluster, ctx: ReconcileContext): Promise<Result> {
    const name = cluster.metadata.name ?? "";
    const ns = cluster.metadata.namespace ?? "";
    const names = clusterNames(name);
    const desired = cluster.spec.replicas ?? DEFAULT_REPLICAS;
    const flavor: Flavor = cluster.status?.flavor ?? flavorOfImage(cluster.spec.image ?? DEFAULT_IMAGE);

    // 0. Names: an object of another owner under one of them stops everything.
    checkOwnedNames(this.d.cache, cluster);

    // 1. Secrets.
    const replicationPassword = await ensureSecrets(this.d, cluster, ctx);

    // 3a. Storage: a shrink is refused; a growth expands the claims, then replaces the
    //     StatefulSet (its claim template cannot change) — see volumes.ts.
    const liveSts = this.d.cache.get<StatefulSetObject>(builtin.statefulSet, ns, names.statefulSet);
    const liveSize = liveSts?.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === "data")?.spec?.resources?.requests?.storage;
    if (liveSize !== undefined && compareQuantity(cluster.spec.storage.size, liveSize) < 0) {
      throw new ClusterProblem("Failed", "StorageShrink", `storage.size ${cluster.spec.storage.size} is smaller than the volumes' ${liveSize}; volumes cannot shrink: set it back to at least ${liveSize}`);
    }
    const storage = await growVolumes(this.d, cluster, liveSize, liveSts?.metadata.deletionTimestamp !== undefined);

    // Pods and the primary: the one on record; without one, chosen from the servers' histories
    // (primary.ts) — never assumed to be ordinal 0.
    const pods = clusterPods(this.d, cluster);
    // The servers there are: the StatefulSet's replicas; while it is being replaced (volumes.ts) it
    // is gone, and then the pods say — a StatefulSet recreated with a smaller count would delete the
    // pods beyond it, the primary's too, without a switchover. (Not the pods while it stands: after
    // a scale-in its leaving pods go one by one, and each would be retired again meanwhile.)
    const current = liveSts ? (liveSts.spec?.replicas ?? 0) : Math.max(0, ...[...pods.keys()].map((ordinal) => ordinal + 1));
    const primaryOrdinal = ordinalOf(name, cluster.status?.currentPrimary ?? "");
    let unknownPrimary: Extract<Selection, { kind: "unknown" }> | undefined;
    if (primaryOrdinal === undefined) {
      const selection = await selectPrimary(this.d, cluster, pods, Math.max(desired, current), flavor);
      if (selection.kind === "chosen") {
        const pName = podName(name, selection.ordinal);
        // On record before it is made writable: every later reconcile starts from it.
        await this.decisions.record(this.d, cluster, { currentPrimary: pName }, (s) => s.currentPrimary === pName);
        ctx.log.info("primary chosen", { pod: pName, why: selection.why });
        await this.d.events.record(cluster, "Normal", "PrimarySelected", `${pName} is the primary: ${selection.why}`);
        // Everything goes on from the recorded primary (and a status of the current version).
        return { requeueAfter: DECISION_RECHECK_MS };
      }
      unknownPrimary = selection;
    }
    const primaryPod = primaryOrdinal === undefined ? undefined : pods.get(primaryOrdinal);
    let primary: InstanceConnection | undefined;
    let primaryError: string | undefined;
    if (primaryPod && primaryOrdinal !== undefined) {
      try {
        const conn = await connectMember(this.d.connector, cluster, primaryOrdinal, primaryPod.metadata.uid ?? "");
        // A pool opened before the server went answers connect() still: only a statement tells (failover.ts counts on it).
        await conn.query("SELECT 1");
        primary = conn;
      } catch (err) {
        primaryError = memberError(err);
      }
    }
    const serverFlavor = primary?.server.flavor ?? flavor;

    // 2. Config, checked against the server before it is applied.
    if (primary) await this.configCheck.check(cluster, primary);

    // 3b. Owned objects.
    // How a config change reaches the servers: at runtime when they can take it, else by a rollout (runtime-config.ts).
    const cm = configMap(cluster, serverFlavor) as KubeObject & { data: Record<string, string> };
    const config = await decideConfig(
      this.d,
      cluster,
      serverFlavor,
      { cnf: cm.data[MY_CNF_KEY] ?? "", hash: configHash(cm) },
      this.d.cache.get(builtin.configMap, ns, names.configMap),
      () => runningServers(this.d, cluster, pods, current),
      ctx,
    );
    cm.metadata.annotations = { ...cm.metadata.annotations, [POD_CONFIG_HASH_ANNOTATION]: config.podHash, [RUNTIME_SETTINGS_ANNOTATION]: JSON.stringify(config.runtime) };
    await applyServingObjects(this.d, cluster, cm);

    // 4. Scale in: stop replication on the leaving ordinals first. When the primary would
    //    leave, nothing shrinks until a switchover (below) moved it to a staying replica.
    //    With no primary known, nothing shrinks: a leaving server may be the one with the newest writes.
    const primaryLeaving = primaryOrdinal !== undefined && desired <= primaryOrdinal && current > desired;
    const stsReplicas = primaryLeaving || (primaryOrdinal === undefined && current > desired) ? current : desired;
    for (let ordinal = current - 1; ordinal >= stsReplicas; ordinal--) {
      const pod = pods.get(ordinal);
      if (pod) await retire(this.d, cluster, ordinal, pod, ctx);
    }
    const stsChanged = storage.replacingStatefulSet || (await applyStatefulSet(this.d, cluster, { flavor: serverFlavor, replicas: stsReplicas, configHash: config.podHash }, liveSts));

    if (primaryOrdinal === undefined) return awaitPrimary(this.d, cluster, pods, unknownPrimary!, ctx);

    // 4b. Failover: a primary that does not answer is watched, and replaced once lost.
    const failover = await this.failover.check({
      d: this.d,
      decisions: this.decisions,
      cluster,
      pods,
      primaryOrdinal,
      primaryError: primary ? undefined : (primaryError ?? "its pod does not exist"),
      flavor: serverFlavor,
      ctx,
    });
    // Moved, or the candidate still applying its relay log: nothing else is done to the servers meanwhile.
    if (failover.moved || failover.promoting) return { requeueAfter: failover.requeueAfter ?? DECISION_RECHECK_MS };

    // 5. Members.
    const servers = Math.min(desired, stsReplicas);
    const { members, recorded, seeds, semiSync, errant } = await convergeMembers(
      this.d,
      this.seeding,
      cluster,
      { pods, primaryOrdinal, primary, primaryError, staying: stsReplicas, replicationPassword, semiSync: semiSyncWish(cluster, serverFlavor, servers) },
      ctx,
    );
    const durability = semiSyncCondition(cluster, serverFlavor, servers, semiSync);
    await reportSemiSyncChange(this.d.events, cluster, findCondition(cluster.status?.conditions, SEMI_SYNC_CONDITION), durability);

    // 6. Pods: role label and readiness gate.
    for (const m of members) await updatePod(this.d, m);

    // 7. One step of a rolling update — or, first of all, the switchover a scale-in needs.
    // (Right after the StatefulSet changed, the cache still has the old one: its revisions say nothing yet.)
    const step: RolloutContext = { d: this.d, decisions: this.decisions, cluster, members, desired, replicationPassword, primaryAnswers: primary !== undefined, seeding: seeds.flatMap((s) => (s.kind === "running" ? [s.pod] : [])), ctx };
    const rollout = primaryLeaving ? await moveOffLeavingPrimary(step, primaryOrdinal) : await rolloutStep(step, stsChanged ? undefined : liveSts);
    if (rollout.fields.currentPrimary !== undefined && rollout.fields.currentPrimary !== cluster.status?.currentPrimary) {
      // Switched over: the status was written already; everything is looked at again from the new primary.
      return { requeueAfter: DECISION_RECHECK_MS };
    }

    // 8. Status.
    const report = statusReport({
      name,
      desired,
      previousPhase: cluster.status?.phase,
      members: recorded,
      withPods: members.length,
      ...(primary ? { primaryServer: { flavor: primary.server.flavor, version: primary.server.version } } : {}),
      rollout,
      extra: [
        storage.condition,
        seedingCondition(seeds, findCondition(cluster.status?.conditions, "Seeding")),
        durability,
        failover.condition,
        failedOverCondition(cluster.status?.lastFailover),
        errantCondition(errant, findCondition(cluster.status?.conditions, "ErrantTransactions")),
      ],
    });
    await writeStatus(this.d.client, RT, cluster, readyStatus(report.fields, report.ready, report.others));
    if (cluster.status?.phase !== report.phase) {
      ctx.log.info("cluster phase changed", { from: cluster.status?.phase, to: report.phase });
      if (report.phase === "Running") await this.d.events.record(cluster, "Normal", "Running", report.message);
    }
    return { requeueAfter: Math.min(report.requeueAfter, failover.requeueAfter ?? report.requeueAfter) };
  }
}
