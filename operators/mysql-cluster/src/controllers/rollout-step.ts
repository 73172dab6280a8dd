// Step 7 of a reconcile: one step of a rolling update, taken. rollout.ts
// decides from what is observed (restart a pod, switch over, wait, or stop at
// a health gate); here the decision meets the backup gate (backups.ts) and is
// carried out — the step recorded in status before the pod goes, the
// switchover moving the role: status first, then labels, then the old
// primary follows. A scale-in that would remove the primary switches over
// first, the same way.
import { builtin, findCondition, kubeTime, type ReconcileContext } from "@stateward/core";
import { MySQLError, replicationSource } from "@stateward/mysql";
import { CONVERGING_REQUEUE_MS, DEFAULT_HEALTH_GATE_SECONDS, DEFAULT_IMAGE, DEFAULT_PAUSED, STEADY_REQUEUE_MS, type MySQLCluster, type MySQLClusterStatus } from "../api.ts";
import { flavorOfImage } from "../config/my-cnf.ts";
import { gtidCount } from "../replication/gtid.ts";
import { connectMember, memberPoolName } from "../replication/members.ts";
import { startReplica } from "../replication/server.ts";
import { SwitchoverError, switchover } from "../replication/switchover.ts";
import { MYSQL_PORT, ROLE_LABEL, podHost, podName } from "../resources/names.ts";
import { backupGate } from "./backups.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import type { Observed, StatefulSetObject } from "./pods.ts";
import { ignoreNotFound } from "./problems.ts";
import type { RecordedDecisions } from "./recorded-decisions.ts";
import { planRollout, type RolloutMember } from "./rollout.ts";
import type { RolloutOutcome } from "./status-report.ts";

/** The label the StatefulSet controller puts on each pod: the revision of the template it was made from. */
const REVISION_LABEL = "controller-revision-hash";
/** How long a switchover waits for the candidate to apply the old primary's last transactions. */
const SWITCHOVER_CATCH_UP_MS = 30_000;
/** While a pod restarts or a backup runs, the rollout is looked at this often. */
const ROLLING_REQUEUE_MS = 2_000;
/** Right after the StatefulSet changed, its controller takes the template within moments. */
const TEMPLATE_REQUEUE_MS = 1_000;

type Deps = Pick<ClusterReconcilerDeps, "client" | "connector" | "addresses" | "events" | "clock" | "targetLabel">;

export interface RolloutContext {
  d: Deps;
  decisions: RecordedDecisions;
  cluster: MySQLCluster;
  members: Observed[];
  desired: number;
  replicationPassword: string;
  /** The primary on record answered this reconcile: no pod is restarted for a rollout while it does not. */
  primaryAnswers: boolean;
  /** Replicas whose seed runs: not restarted for a rollout until it ended. */
  seeding: string[];
  ctx: ReconcileContext;
}

/** Decides and takes one step of a rolling update (see rollout.ts). `sts` undefined: it just changed, its revisions say nothing yet. */
export async function rolloutStep(r: RolloutContext, sts: StatefulSetObject | undefined): Promise<RolloutOutcome> {
  const { d, cluster, members, desired, ctx } = r;
  const name = cluster.metadata.name ?? "";
  const ns = cluster.metadata.namespace ?? "";
  const image = cluster.spec.image ?? DEFAULT_IMAGE;
  const revision = sts?.status?.updateRevision;
  if (!sts || !revision || (sts.status?.observedGeneration ?? 0) < (sts.metadata.generation ?? 0)) {
    return {
      fields: { targetImage: image },
      condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: "waiting for the StatefulSet controller to take the current template" },
      rolling: true,
      requeueAfter: TEMPLATE_REQUEUE_MS,
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
  // A step whose pod is back Ready on the new template is over: its health gate passed, and what
  // befalls that pod later (it may be the primary by then) is not the rollout's restart.
  // The pod must be the one made after the restart: a stale cache may still show the deleted one, which
  // matches the update revision when the change was reverted meanwhile.
  const step = cluster.status?.rollout;
  const stepOver = step !== undefined && members.some((m) => m.status.name === step.pod && m.status.ready && m.pod.metadata.labels?.[REVISION_LABEL] === revision && recreatedSince(m.pod, step.startedAt));
  const fields: Partial<MySQLClusterStatus> = { targetImage: image, updatedReplicas: updated, updated: `${updated}/${desired}`, ...(stepOver ? { rollout: undefined } : {}) };
  const strategy = cluster.spec.updateStrategy ?? {};
  const decision = planRollout({
    members: view,
    desired,
    requestedPrimary: cluster.spec.primary,
    inProgress: stepOver ? undefined : step,
    paused: strategy.paused ?? DEFAULT_PAUSED,
    primaryAnswers: r.primaryAnswers,
    seeding: r.seeding,
    healthGateSeconds: strategy.healthGateSeconds ?? DEFAULT_HEALTH_GATE_SECONDS,
    now: d.clock.now(),
  });
  const previous = findCondition(cluster.status?.conditions, "Upgrading");
  if (decision.kind === "restart" || decision.kind === "switchover") {
    // No pod restarts and no switchover while a backup of the cluster runs; backupBeforeUpgrade first.
    const gate = await backupGate(d.client, cluster, revision, updated < view.length, d.targetLabel);
    if (gate.kind === "wait") {
      if (previous?.reason !== gate.reason) await d.events.record(cluster, "Normal", gate.reason, gate.message);
      return { fields, condition: { type: "Upgrading", status: "True", reason: gate.reason, message: gate.message }, rolling: true, requeueAfter: ROLLING_REQUEUE_MS };
    }
    if (gate.kind === "failed") {
      if (previous?.reason !== "BackupFailed") await d.events.record(cluster, "Warning", "BackupFailed", gate.message);
      return { fields, condition: { type: "Upgrading", status: "False", reason: "BackupFailed", message: gate.message }, rolling: false, requeueAfter: STEADY_REQUEUE_MS };
    }
  }
  switch (decision.kind) {
    case "complete": {
      const done = { type: "Upgrading", status: "False", reason: "UpToDate" } as const;
      // Servers missing (a pod deleted and not made yet, a scale-out's new pods): the end is recorded once they exist.
      if (updated < desired) {
        return { fields, condition: { ...done, message: `the ${updated} of ${desired} servers that exist run the current template (image ${image})` }, rolling: false };
      }
      // A rollout ended: a step on record, or the servers on another template than when the last one ended (the pods
      // may have been recreated by hand, or outside a step, while it was paused). Not a scale: it keeps the revision.
      const { rollout, currentImage, currentRevision } = cluster.status ?? {};
      if (rollout || (currentImage !== undefined && currentImage !== image) || (currentRevision !== undefined && currentRevision !== revision)) {
        await d.events.record(cluster, "Normal", "RolloutComplete", `All ${desired} servers run the current template (image ${image})`);
      }
      return { fields: { ...fields, currentImage: image, currentRevision: revision, rollout: undefined }, condition: { ...done, message: `all ${desired} servers run the current template (image ${image})` }, rolling: false };
    }
    case "wait":
      return { fields, condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: decision.message }, rolling: true, requeueAfter: ROLLING_REQUEUE_MS };
    case "blocked": {
      if (previous?.reason !== decision.reason) {
        ctx.log.info("rollout stopped", { reason: decision.reason, pod: decision.pod });
        await d.events.record(cluster, decision.reason === "Paused" ? "Normal" : "Warning", decision.reason, decision.message);
      }
      return { fields, condition: { type: "Upgrading", status: "False", reason: decision.reason, message: decision.message }, rolling: false, requeueAfter: decision.reason === "Paused" ? STEADY_REQUEUE_MS : CONVERGING_REQUEUE_MS };
    }
    case "restart": {
      ctx.log.info("restarting a pod for the rollout", { pod: decision.pod, role: decision.role, revision });
      // On record before the pod goes: the health gate counts from here, whatever happens next.
      const inProgress = { pod: decision.pod, startedAt: kubeTime(d.clock.now()), role: decision.role };
      await r.decisions.record(d, cluster, { rollout: inProgress }, (s) => s.rollout?.startedAt === inProgress.startedAt);
      await d.events.record(cluster, "Normal", "PodRestarted", `Restarting ${decision.pod} (${decision.role}) to apply revision ${revision}; ${updated}/${desired} updated`);
      await d.client.delete(builtin.pod, ns, decision.pod).catch(ignoreNotFound);
      d.connector.forget(ns, memberPoolName(name, decision.ordinal));
      return {
        fields: { ...fields, rollout: inProgress },
        condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: `restarting ${decision.pod} (${decision.role}); ${updated}/${desired} updated` },
        rolling: true,
        requeueAfter: ROLLING_REQUEUE_MS,
      };
    }
    case "switchover":
      return switchTo(r, decision.from, decision.to, fields);
  }
}

/** Scaling in would remove the primary: it moves to the most caught-up Ready replica that stays. */
export async function moveOffLeavingPrimary(r: RolloutContext, primaryOrdinal: number): Promise<RolloutOutcome> {
  const { cluster, members, desired } = r;
  const flavor = cluster.status?.flavor ?? flavorOfImage(cluster.spec.image ?? DEFAULT_IMAGE);
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
  return switchTo(r, { ordinal: from.ordinal, name: from.status.name }, { ordinal: staying.ordinal, name: staying.status.name }, {});
}

/** A planned switchover (see replication/switchover.ts), then the role moved: status first, then labels, then the old primary follows. */
async function switchTo(r: RolloutContext, from: { ordinal: number; name: string }, to: { ordinal: number; name: string }, fields: Partial<MySQLClusterStatus>): Promise<RolloutOutcome> {
  const { d, cluster, members, ctx } = r;
  const name = cluster.metadata.name ?? "";
  const ns = cluster.metadata.namespace ?? "";
  const fromPod = members.find((m) => m.ordinal === from.ordinal)?.pod;
  const toPod = members.find((m) => m.ordinal === to.ordinal)?.pod;
  await d.events.record(cluster, "Normal", "SwitchoverStarted", `Switching the primary from ${from.name} to ${to.name}: ${from.name} is read-only until ${to.name} has applied all of its transactions`);
  try {
    const oldPrimary = await connectMember(d.connector, cluster, from.ordinal, fromPod?.metadata.uid ?? "");
    const candidate = await connectMember(d.connector, cluster, to.ordinal, toPod?.metadata.uid ?? "");
    const result = await switchover(oldPrimary, candidate, { catchUpMs: SWITCHOVER_CATCH_UP_MS, clock: d.clock, signal: ctx.signal });
    // The new primary is on record before anything else: a restart from here on finds it.
    await r.decisions.record(d, cluster, { currentPrimary: to.name }, (s) => s.currentPrimary === to.name);
    await d.client.patch(builtin.pod, ns, to.name, { metadata: { labels: { [ROLE_LABEL]: "primary" } } }).catch(ignoreNotFound);
    await d.client.patch(builtin.pod, ns, from.name, { metadata: { labels: { [ROLE_LABEL]: "replica" } } }).catch(ignoreNotFound);
    const source = await replicationSource(d.addresses, { host: podHost(name, ns, to.ordinal), port: MYSQL_PORT });
    await startReplica(oldPrimary, source, r.replicationPassword);
    ctx.log.info("switched over", { from: from.name, to: to.name, readOnlyMs: result.readOnlyMs });
    await d.events.record(cluster, "Normal", "SwitchedOver", `${to.name} is the primary (was ${from.name}); writes were refused for ${result.readOnlyMs} ms; no transaction was left behind (GTID ${result.position})`);
    return { fields: { ...fields, currentPrimary: to.name }, condition: { type: "Upgrading", status: "True", reason: "RollingUpdate", message: `switched over to ${to.name}` }, rolling: true };
  } catch (err) {
    if (!(err instanceof SwitchoverError) && !(err instanceof MySQLError)) throw err;
    await d.events.record(cluster, "Warning", "SwitchoverFailed", `Switching over from ${from.name} to ${to.name} failed: ${err.message}`);
    return { fields, condition: { type: "Upgrading", status: "False", reason: "SwitchoverFailed", message: `switching over to ${to.name} failed: ${err.message}; tried again in 30 s` }, rolling: false, requeueAfter: STEADY_REQUEUE_MS };
  }
}

/** Whether `pod` was created at or after `since` (both second-precise API times). */
function recreatedSince(pod: Observed["pod"], since: string): boolean {
  const created = pod.metadata.creationTimestamp;
  return created !== undefined && new Date(created).getTime() >= new Date(since).getTime();
}
