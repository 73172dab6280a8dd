// What an operator implements: reconcile(request) -> result.
import type { Logger } from "../log/index.ts";

/** The object to reconcile, by key. Cluster-scoped objects have no namespace. */
export interface Request {
  namespace?: string;
  name: string;
}

export interface Result {
  /** Reconcile this object again after this many milliseconds (e.g. to poll something outside Kubernetes). */
  requeueAfter?: number;
}

export interface ReconcileContext {
  /** A logger with controller, namespace, name and reconcileID on every line. */
  log: Logger;
  /**
   * Aborted when the manager shuts down or loses leadership (reason: LeadershipLostError); long
   * operations must take it and stop at once.
   */
  signal: AbortSignal;
  reconcileID: string;
}

export interface Reconciler {
  reconcile(request: Request, ctx: ReconcileContext): Promise<Result | undefined | void>;
}

/**
 * An error that retrying cannot fix until the object changes (invalid spec,
 * a reference to something that must be created by the user). The controller
 * logs it, counts it and does not requeue; the next change to the object
 * triggers a reconcile as usual.
 */
export class TerminalError extends Error {
  override name = "TerminalError";
}

export function requestKey(req: Request): string {
  return req.namespace ? `${req.namespace}/${req.name}` : req.name;
}
