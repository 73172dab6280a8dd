// Steps 4 and 5 of a reconcile: the servers and their replication. The
// primary is made writable with the replication account; each replica is
// seeded when the primary lacks the binary logs it needs (handed to a
// background seed, controllers/seeding.ts), pointed at the primary (GTID
// auto-position) and judged: Ready only when replicating and caught up. A
// replica leaving with scale-in has its replication stopped first.
import type { ReconcileContext } from "@stateward/core";
import { MySQLError, replicationSource, type InstanceConnection } from "@stateward/mysql";
import { DEFAULT_MAX_LAG_SECONDS, type MemberStatus, type MySQLCluster } from "../api.ts";
import { SERVER_ID_BASE } from "../config/my-cnf.ts";
import { errantTransactions, gtidContains } from "../replication/gtid.ts";
import { connectMember, memberPoolName } from "../replication/members.ts";
import { SeedBusyError, SeedError, seedReplica } from "../replication/seed.ts";
import { applySemiSync, ensureReplicaSemiSync, planSemiSync, readSemiSync, type SemiSyncState, type SemiSyncWish } from "../replication/semi-sync.ts";
import { preparePrimary as makeWritable, primaryHasHistoryFor, readReplica, readServer, setReadOnly, setServerId, startReplica, stopReplica, type ServerState } from "../replication/server.ts";
import { MYSQL_PORT, podHost, podName } from "../resources/names.ts";
import type { ClusterReconcilerDeps } from "./deps.ts";
import type { Observed, Pod } from "./pods.ts";
import { memberError } from "./problems.ts";
import type { ReplicaSeeding, SeedView } from "./seeding.ts";
import { messageOf } from "@stateward/core";

type Deps = Pick<ClusterReconcilerDeps, "connector" | "addresses" | "events">;

export interface MembersInput {
  pods: Map<number, Pod>;
  primaryOrdinal: number;
  /** The primary's server, connected; undefined when it does not answer (`primaryError` says why). */
  primary: InstanceConnection | undefined;
  primaryError: string | undefined;
  /** Ordinals from here on are leaving (scale-in): not members any more. */
  staying: number;
  replicationPassword: string;
  /** The primary's semi-sync side (controllers/durability.ts). */
  semiSync: SemiSyncWish;
}

export interface MembersObserved {
  /** Every member with a pod, by ordinal. */
  members: Observed[];
  /**
   * What status.members records, by ordinal: every member with a pod, and the primary without
   * one (gone, or stuck Terminating on a lost node) when its last position is on record.
   */
  recorded: MemberStatus[];
  /** What the replicas that need seeding are doing. */
  seeds: SeedView[];
  /** The primary's semi-sync state; undefined when it did not answer. */
  semiSync: SemiSyncState | undefined;
  /** Servers not rejoined because they hold transactions the primary lacks, with those transactions. */
  errant: { pod: string; gtids: string[] }[];
}

/** The primary made writable, each replica converged; what each one is. */
export async function convergeMembers(d: Deps, seeding: ReplicaSeeding, cluster: MySQLCluster, input: MembersInput, ctx: ReconcileContext): Promise<MembersObserved> {
  const name = cluster.metadata.name ?? "";
  const { pods, primaryOrdinal, primary } = input;
  const members: Observed[] = [];
  let primaryState: ServerState | undefined;
  let semiSync: SemiSyncState | undefined;
  const primaryPod = pods.get(primaryOrdinal);
  const primaryName = podName(name, primaryOrdinal);
  // Its last position seen stays on record until it answers again — also while its pod is gone or
  // being deleted: a failover starts only from a primary seen, and checks the candidate has that
  // position (controllers/failover.ts). Dropped with the pod, no failover would ever start.
  const seen = cluster.status?.members?.find((m) => m.name === primaryName)?.gtidExecuted;
  const absentPrimary: MemberStatus | undefined =
    primaryPod || seen === undefined ? undefined : { name: primaryName, role: "primary", ready: false, gtidExecuted: seen, message: input.primaryError ?? "its pod does not exist" };
  if (primaryPod) {
    const status: MemberStatus = { name: primaryName, role: "primary", ready: false };
    if (seen !== undefined) status.gtidExecuted = seen;
    if (primary) {
      try {
        ({ state: primaryState, semiSync } = await preparePrimary(d, cluster, primary, primaryOrdinal, input, ctx));
        status.ready = !primaryState.readOnly;
        status.gtidExecuted = primaryState.gtidExecuted;
      } catch (err) {
        status.message = memberError(err);
      }
    } else {
      status.message = input.primaryError ?? "the server is not reachable yet";
    }
    members.push({ ordinal: primaryOrdinal, pod: primaryPod, status });
  }
  const seeds: SeedView[] = [];
  const errant: { pod: string; gtids: string[] }[] = [];
  for (const [ordinal, pod] of [...pods].sort(([a], [b]) => a - b)) {
    if (ordinal === primaryOrdinal || ordinal >= input.staying) continue;
    const status: MemberStatus = { name: podName(name, ordinal), role: "replica", ready: false };
    members.push({ ordinal, pod, status });
    if (!primary || !primaryState) {
      status.message = "waiting for the primary";
      continue;
    }
    try {
      const seed = await convergeReplica(d, seeding, cluster, { conn: primary, ordinal: primaryOrdinal, state: primaryState }, ordinal, pod, input.replicationPassword, status, ctx);
      if (seed && "errant" in seed) errant.push({ pod: status.name, gtids: seed.errant });
      else if (seed) seeds.push(seed);
    } catch (err) {
      if (err instanceof SeedError) status.message = `seeding failed: ${err.message}`;
      else status.message = memberError(err);
    }
  }
  // Semi-sync is turned on once a replica replicates: before, every commit would wait out the timeout.
  // From the state preparePrimary read: the primary's semi-sync side is read once per reconcile.
  if (primary && semiSync && input.semiSync.enabled && members.some((m) => m.status.role === "replica" && m.status.ioThread)) {
    const plan = planSemiSync(semiSync, input.semiSync);
    if (plan.done.length > 0) {
      try {
        semiSync = await applySemiSync(primary, plan);
        await d.events.record(cluster, "Normal", "PrimaryConfigured", `${podName(name, primaryOrdinal)} is the primary: ${plan.done.join(", ")}`);
      } catch (err) {
        memberError(err);
      }
    }
  }
  members.sort((a, b) => a.ordinal - b.ordinal);
  const recorded = [...members, ...(absentPrimary ? [{ ordinal: primaryOrdinal, status: absentPrimary }] : [])].sort((a, b) => a.ordinal - b.ordinal).map((m) => m.status);
  return { members, recorded, seeds, semiSync, errant };
}

/** The primary made writable with the replication account; its state and its semi-sync side (read once here). */
async function preparePrimary(d: Deps, cluster: MySQLCluster, conn: InstanceConnection, ordinal: number, input: MembersInput, ctx: ReconcileContext): Promise<{ state: ServerState; semiSync: SemiSyncState }> {
  let state = await readServer(conn);
  let semiSync = await readSemiSync(conn);
  if (state.serverId !== SERVER_ID_BASE + ordinal) await setServerId(conn, SERVER_ID_BASE + ordinal);
  // Semi-sync before writes, when replicas were replicating (a primary just promoted): its first write
  // is already acknowledged by one. A new cluster's primary gets it once a replica replicates (convergeMembers).
  // After a failover the status written while the old primary did not answer shows no replica replicating,
  // so the last failover's target, still read-only, counts as promoted whatever the members say — when a
  // server other than the lost one is there to acknowledge (with none, its first commit would wait out
  // the timeout: semi-sync then comes once a replica replicates, as for a new cluster).
  const name = cluster.metadata.name ?? "";
  const last = cluster.status?.lastFailover;
  const acknowledgers = [...input.pods.keys()].filter((o) => o !== ordinal && o < input.staying && podName(name, o) !== last?.from);
  const promoted = state.readOnly && last?.to === podName(name, ordinal) && acknowledgers.length > 0;
  const replicated = promoted || (cluster.status?.members?.some((m) => m.role === "replica" && m.ioThread) ?? false);
  const plan = !input.semiSync.enabled || replicated ? planSemiSync(semiSync, input.semiSync) : undefined;
  if (plan) semiSync = await applySemiSync(conn, plan);
  const done = [...(plan?.done ?? []), ...(await makeWritable(conn, state, input.replicationPassword))];
  if (done.length > 0) {
    ctx.log.info("primary prepared", { pod: podName(cluster.metadata.name ?? "", ordinal), done });
    await d.events.record(cluster, "Normal", "PrimaryConfigured", `${podName(cluster.metadata.name ?? "", ordinal)} is the primary: ${done.join(", ")}`);
    state = await readServer(conn);
  }
  return { state, semiSync };
}

/** Makes a server that is not the primary read-only, and says so: its clients' writes are refused from now on. */
async function fence(d: Deps, cluster: MySQLCluster, conn: InstanceConnection, pod: string, primary: string, ctx: ReconcileContext): Promise<void> {
  await setReadOnly(conn, true);
  ctx.log.warn("fenced a writable server that is not the primary", { pod, primary });
  await d.events.record(
    cluster,
    "Warning",
    "Fenced",
    `${pod} was writable but ${primary} is the primary (an old primary back after a failover, or read_only turned off by hand): made read-only, its clients' writes are refused`,
  );
}

/**
 * One replica: seeded if it must be, pointed at the primary, judged; returns what its seed does, when
 * it needs one, or the transactions it holds that the primary lacks (errant: a returning old primary's
 * unacknowledged last writes, a write made on a replica by hand) — such a server is not pointed at the
 * primary, where replication would stop on them or, worse, go on around them.
 */
async function convergeReplica(
  d: Deps,
  seeding: ReplicaSeeding,
  cluster: MySQLCluster,
  primary: { conn: InstanceConnection; ordinal: number; state: ServerState },
  ordinal: number,
  pod: Pod,
  replicationPassword: string,
  status: MemberStatus,
  ctx: ReconcileContext,
): Promise<SeedView | { errant: string[] } | undefined> {
  const name = cluster.metadata.name ?? "";
  const ns = cluster.metadata.namespace ?? "";
  const pName = podName(name, ordinal);
  const conn = await connectMember(d.connector, cluster, ordinal, pod.metadata.uid ?? "");
  const source = await replicationSource(d.addresses, { host: podHost(name, ns, primary.ordinal), port: MYSQL_PORT });
  let replica = await readReplica(conn);
  // A seed under way holds the replica (its copy is half there): nothing else is done to it.
  const running = seeding.running(ns, name, pName);
  if (running) {
    status.message = `seeding: copying the primary's data (since ${running.since.toISOString()})`;
    return running;
  }
  // Only the primary takes writes. A writable server here is an old primary back after a failover the
  // operator could not tell it about (cut off from the operator, not from its clients: it went on taking
  // writes), or one made writable by hand. It is fenced before anything else is decided about it: kept
  // out for errant transactions, it must not take more.
  const found = await readServer(conn);
  if (!found.readOnly) await fence(d, cluster, conn, pName, podName(name, primary.ordinal), ctx);
  if (!replica.configured || replica.sourceHost !== source.host || replica.sourcePort !== source.port) {
    const state = found;
    let errant = errantTransactions(primary.conn.server.flavor, primary.state.history, state.history);
    // The primary was read earlier in this reconcile. Under writes, a replica fed through another server
    // (the old primary, right after a switchover) already holds transactions the primary committed since:
    // only what the primary still lacks when read again, after this replica, is errant.
    if (errant.length > 0) errant = errantTransactions(primary.conn.server.flavor, (await readServer(primary.conn)).history, state.history);
    if (errant.length > 0) {
      status.message = `not rejoined: it holds transactions the primary ${podName(name, primary.ordinal)} lacks (errant: ${errant.join(", ")}); it stays read-only. Inspect them, then delete its pod and volume to have it seeded from the primary`;
      return { errant };
    }
    if (!(await primaryHasHistoryFor(primary.conn, state.gtidExecuted))) {
      if (state.userDatabases > 0) {
        status.message = "the primary no longer has the binary logs this server needs, and the server holds data, so it cannot be seeded; delete its volume to have it seeded from scratch";
        return undefined;
      }
      const view = startSeed(d, seeding, cluster, primary, conn, pName, ctx);
      status.message =
        view.kind === "running"
          ? `seeding: copying the primary's data (since ${view.since.toISOString()})`
          : `seeding ${view.busy ? "put off" : "failed"} (attempt ${view.failures}): ${view.lastError}; next attempt at ${view.nextAttempt.toISOString()}`;
      return view;
    }
    if (state.serverId !== SERVER_ID_BASE + ordinal) await setServerId(conn, SERVER_ID_BASE + ordinal);
    await startReplica(conn, source, replicationPassword);
    ctx.log.info("replication configured", { pod: pName, source: podName(name, primary.ordinal) });
    await d.events.record(cluster, "Normal", "ReplicationConfigured", `${pName} replicates from ${podName(name, primary.ordinal)}`);
    replica = await readReplica(conn);
  }
  await ensureReplicaSemiSync(conn);
  const state = await readServer(conn);
  const maxLag = cluster.spec.updateStrategy?.maxLagSeconds ?? DEFAULT_MAX_LAG_SECONDS;
  status.ioThread = replica.ioRunning;
  status.sqlThread = replica.sqlRunning;
  if (replica.lagSeconds !== undefined && Number.isFinite(replica.lagSeconds)) status.lagSeconds = replica.lagSeconds;
  status.gtidExecuted = state.gtidExecuted;
  const caughtUp = gtidContains(primary.conn.server.flavor, state.gtidExecuted, primary.state.gtidExecuted);
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

/** The seeding hand-off: the copy runs in the background (controllers/seeding.ts); the replica is set up by a reconcile after it is done. */
function startSeed(d: Deps, seeding: ReplicaSeeding, cluster: MySQLCluster, primary: { conn: InstanceConnection; ordinal: number }, conn: InstanceConnection, pName: string, ctx: ReconcileContext): SeedView {
  const name = cluster.metadata.name ?? "";
  const primaryName = podName(name, primary.ordinal);
  return seeding.ensure(
    cluster.metadata.namespace ?? "",
    name,
    pName,
    async (signal) => {
      await d.events.record(cluster, "Normal", "SeedingReplica", `Copying the primary's data into ${pName}: the primary no longer has all the binary logs it needs`);
      return seedReplica(primary.conn, conn, { signal });
    },
    (err) => {
      if (err instanceof SeedBusyError) return { message: err.message, busy: true };
      if (err instanceof SeedError) return { message: err.message, busy: false };
      if (err instanceof MySQLError) return { message: `${err.message} (the copy was removed)`, busy: false };
      if (err instanceof Error && err.name === "AbortError") return { message: "stopped: the manager is shutting down", busy: false };
      return { message: messageOf(err), busy: false };
    },
    {
      succeeded: async (seeded) => {
        ctx.log.info("replica seeded", { pod: pName, databases: seeded.databases, tables: seeded.tables, rows: seeded.rows });
        await d.events.record(cluster, "Normal", "ReplicaSeeded", `Seeded ${pName}: ${seeded.databases} databases, ${seeded.tables} tables, ${seeded.rows} rows, at GTID ${seeded.position}`);
      },
      failed: async (message, busy, failures, retryInMs) => {
        ctx.log.info("seeding did not complete", { pod: pName, busy, failures, retryInMs });
        await d.events.record(
          cluster,
          "Warning",
          busy ? "SeedingPutOff" : "SeedFailed",
          `Seeding ${pName} from ${primaryName} ${busy ? "put off" : "failed"} (attempt ${failures}): ${message}; next attempt in ${Math.round(retryInMs / 1000)} s`,
        );
      },
    },
  );
}

/** A replica leaving with scale-in: replication stopped and forgotten; a server already gone is fine. */
export async function retire(d: Deps, cluster: MySQLCluster, ordinal: number, pod: Pod, ctx: ReconcileContext): Promise<void> {
  const pName = podName(cluster.metadata.name ?? "", ordinal);
  try {
    const conn = await connectMember(d.connector, cluster, ordinal, pod.metadata.uid ?? "");
    await stopReplica(conn);
    ctx.log.info("replication stopped for scale-in", { pod: pName });
    await d.events.record(cluster, "Normal", "ReplicaRemoved", `Stopped replication on ${pName}; removing it (its volume is kept)`);
  } catch (err) {
    ctx.log.info("could not stop replication on a leaving server; removing it anyway", { pod: pName, error: memberError(err) });
    await d.events.record(cluster, "Warning", "ReplicaRemoved", `Removing ${pName} without stopping its replication: ${memberError(err)}`);
  }
  d.connector.forget(cluster.metadata.namespace ?? "", memberPoolName(cluster.metadata.name ?? "", ordinal));
}
