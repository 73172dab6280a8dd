// What the backup benchmarks do to their resources: create a MySQLBackup or
// MySQLRestore and time it to Completed while watching the manager's memory
// and CPU, and empty their folder of the bucket afterwards.
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3";
import { findCondition, messageOf, type Condition, type KubeClient, type KubeObject, type ResourceType } from "@stateward/core";
import { waitFor } from "../support/wait.ts";
import type { ManagerHandle } from "./manager-handle.ts";
import { watchProcess, type UsageWindow } from "./process-usage.ts";

/** The sampling period for the manager's RSS. */
const RSS_SAMPLE_MS = 250;
/** Status polling: 100 ms on operations of tens of seconds is well under 1 % of error. */
const POLL_MS = 100;
/** Several times what 2 × 4 M rows need on 2 cores, so only a hang trips it. */
const OPERATION_TIMEOUT_MS = 600_000;

export interface Finished<T> {
  obj: T;
  seconds: number;
  /** The manager's memory and CPU over the operation. */
  usage: UsageWindow;
}

type Operation = KubeObject & { status?: { phase?: string; conditions?: Condition[] } };

/**
 * Creates `obj` and waits until its phase is Completed (Failed throws, with
 * the condition's message), timing it from the create and watching the
 * manager's memory and CPU meanwhile.
 */
export async function timedOperation<T extends Operation>(client: KubeClient, manager: ManagerHandle, rt: ResourceType, obj: T): Promise<Finished<T>> {
  const ns = obj.metadata.namespace ?? "";
  const name = obj.metadata.name ?? "";
  const window = watchProcess(manager.pid, RSS_SAMPLE_MS, async () => (await manager.stats()).memory);
  const measured = await (async () => {
    const t0 = performance.now();
    await client.create<T>(rt, obj);
    let last: T | undefined;
    const done = await waitFor(
      `${rt.kind} ${name} to finish`,
      async () => {
        last = await client.get<T>(rt, ns, name);
        return last.status?.phase === "Completed" || last.status?.phase === "Failed" ? last : undefined;
      },
      OPERATION_TIMEOUT_MS,
      POLL_MS,
    ).catch((err: unknown) => {
      // A timeout alone does not say why: the last status does (e.g. Pending, WaitingForSlot).
      const ready = findCondition(last?.status?.conditions, "Ready");
      throw new Error(`${messageOf(err)}; last seen ${last?.status?.phase ?? "without a status"}: ${ready?.reason ?? ""} ${ready?.message ?? ""}`);
    });
    return { done, seconds: (performance.now() - t0) / 1000 };
  })().then(
    (value) => ({ ok: true as const, ...value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  // Stopped on failure too, so no timer outlives the benchmark.
  const usage = await window.stop();
  if (!measured.ok) throw measured.error;
  const { done, seconds } = measured;
  if (done.status?.phase !== "Completed") {
    const ready = findCondition(done.status?.conditions, "Ready");
    throw new Error(`${rt.kind} ${name} ended ${done.status?.phase ?? "?"}: ${ready?.reason ?? ""} ${ready?.message ?? ""} (manager log: ${manager.logFile})`);
  }
  return { obj: done, seconds, usage };
}

/** Every object under `prefix/` in the bucket, deleted 1,000 at a time (S3's limit per request). */
export async function deletePrefix(s3: S3Client, bucket: string, prefix: string): Promise<void> {
  for (;;) {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/` }));
    const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
    if (keys.length === 0) return;
    const out = await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
    // Without this, a key that cannot be deleted would be listed and retried forever.
    const refused = out.Errors ?? [];
    if (refused.length > 0) throw new Error(`${refused.length} objects could not be deleted, e.g. ${refused[0]?.Key ?? "?"}: ${refused[0]?.Message ?? refused[0]?.Code ?? "?"}`);
  }
}

