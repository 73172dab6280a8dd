// MySQLInstance: log in with the admin Secret and report what answered —
// Ready, flavor, version — or why nothing did. Re-checked periodically, so
// the status follows the server; written only when it changes.
import type { Cache, EventRecorder, KubeClient, ReconcileContext, Reconciler, Request, Result } from "@stateward/core";
import { ReconcileError, readyStatus, writeStatus } from "@stateward/core";
import type { MySQLConnector } from "./connector.ts";
import { toFailure } from "./failures.ts";
import { MySQLInstanceKind, type MySQLInstance } from "./instance-api.ts";

export interface MySQLInstanceReconcilerOptions {
  /** How often a reachable instance is checked again. Defaults to 60 s. */
  checkIntervalMs?: number;
}

const MYI = MySQLInstanceKind.resource;

/** ±10 %, so that many objects created together do not stay in lockstep. */
export function jitter(ms: number): number {
  return Math.round(ms * (0.9 + Math.random() * 0.2));
}

export class MySQLInstanceReconciler implements Reconciler {
  private readonly client: KubeClient;
  private readonly cache: Cache;
  private readonly events: EventRecorder;
  private readonly connector: MySQLConnector;
  private readonly checkIntervalMs: number;

  constructor(client: KubeClient, cache: Cache, events: EventRecorder, connector: MySQLConnector, opts: MySQLInstanceReconcilerOptions = {}) {
    this.client = client;
    this.cache = cache;
    this.events = events;
    this.connector = connector;
    this.checkIntervalMs = opts.checkIntervalMs ?? 60_000;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const instance = this.cache.get<MySQLInstance>(MYI, req.namespace, req.name);
    if (!instance) {
      this.connector.forget(req.namespace ?? "", req.name);
      return undefined;
    }
    try {
      const conn = await this.connector.connect(instance);
      const server = await conn.ping();
      const updated = await writeStatus(this.client, MYI, instance, readyStatus({ serverVersion: server.version, flavor: server.flavor }, {
        status: "True",
        reason: "Connected",
        message: `Connected as ${conn.username} to ${server.flavor} ${server.versionString}${conn.tls ? " over TLS" : " without TLS"}`,
      }));
      if (updated !== instance) ctx.log.info("instance ready", { flavor: server.flavor, version: server.version, tls: conn.tls });
      return { requeueAfter: jitter(this.checkIntervalMs) };
    } catch (err) {
      const failure = toFailure(err, req.name, "");
      await writeStatus(this.client, MYI, instance, readyStatus({}, { status: "False", reason: failure.reason, message: failure.message }));
      await this.events.record(instance, "Warning", failure.reason, failure.message);
      // Retried whatever the failure, even one a DatabaseUser would wait on: an instance's status follows its server.
      throw failure.terminal ? new ReconcileError(failure.reason, failure.message, { cause: failure }) : failure;
    }
  }
}
