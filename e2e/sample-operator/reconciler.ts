import {
  TerminalError,
  addFinalizer,
  applyIfChanged,
  builtin,
  controllerReference,
  isBeingDeleted,
  messageOf,
  readyStatus,
  removeFinalizer,
  writeStatus,
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
import { WidgetKind, type Widget } from "./api.ts";

export const FINALIZER = "sample.stateward.io/cleanup";

/** Something outside Kubernetes that the widget creates and the finalizer must clean up. */
export interface ExternalSystem {
  ensure(key: string, message: string): Promise<void>;
  remove(key: string): Promise<void>;
}

export class WidgetReconciler implements Reconciler {
  private readonly client: KubeClient;
  private readonly cache: Cache;
  private readonly events: EventRecorder;
  private readonly external: ExternalSystem;

  constructor(client: KubeClient, cache: Cache, events: EventRecorder, external: ExternalSystem) {
    this.client = client;
    this.cache = cache;
    this.events = events;
    this.external = external;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | undefined> {
    const cached = this.cache.get<Widget>(WidgetKind.resource, req.namespace, req.name);
    if (!cached) return undefined;
    const key = `${req.namespace}/${req.name}`;
    if (isBeingDeleted(cached)) {
      await this.external.remove(key);
      await removeFinalizer(this.client, WidgetKind.resource, cached, FINALIZER);
      ctx.log.info("cleaned up");
      return undefined;
    }
    let widget: Widget = await addFinalizer(this.client, WidgetKind.resource, cached, FINALIZER);
    try {
      if (widget.spec.fail) throw new Error("the widget asked to fail (spec.fail is true)");
      if (widget.spec.message.includes("terminal")) throw new TerminalError("the message says terminal");
      await this.external.ensure(key, widget.spec.message);
      const name = `${req.name}-widget`;
      const desired = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name, namespace: req.namespace, ownerReferences: [controllerReference(widget, WidgetKind.resource)] },
        data: { message: widget.spec.message },
      };
      const live = this.cache.get<KubeObject>(builtin.configMap, req.namespace, name);
      if (await applyIfChanged(this.client, builtin.configMap, desired, live)) ctx.log.info("configmap applied", { configMap: name });
      widget = await this.writeStatus(widget, { configMap: name }, {
        status: "True", reason: "Reconciled", message: `ConfigMap ${name} is up to date`,
      });
      return undefined;
    } catch (err) {
      const message = messageOf(err);
      await this.writeStatus(widget, {}, { status: "False", reason: "ReconcileFailed", message });
      await this.events.record(widget, "Warning", "ReconcileFailed", message);
      throw err;
    }
  }

  /** Writes status only when it changed (the steady-state rule). */
  private async writeStatus(widget: Widget, fields: { configMap?: string }, ready: Omit<ConditionUpdate, "type" | "observedGeneration">): Promise<Widget> {
    return writeStatus(this.client, WidgetKind.resource, widget, readyStatus(fields, ready));
  }
}
