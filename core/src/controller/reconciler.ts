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
  /**
   * Optional: told of the requests next in the queue (about twice the workers ahead, each
   * several times as the queue moves) when a worker takes one, so that it can start the reads
   * their reconciles will wait for. Reads only, nothing that changes anything, and nothing that
   * throws; what it starts must be bounded and dropped if unused. Without it, nothing is read ahead.
   */
  readAhead?(request: Request): void;
}

export interface ReconcileErrorOptions {
  /** Retrying cannot help until the object changes: the controller does not requeue. Defaults to false. */
  terminal?: boolean;
  /** The error this one explains (ES2022 `cause`), kept for the logs; never shown in a condition or an Event. */
  cause?: unknown;
}

/**
 * Why a reconcile failed, in the words a condition and an Event carry: a
 * CamelCase `reason`, a `message` a user can act on (never a secret), and
 * whether retrying can help. The controller understands it: a `terminal` one
 * is logged and counted and not requeued (the next change to the object
 * triggers a reconcile as usual); any other is retried with backoff, as is
 * any other error. Operators extend it with their own reason vocabularies.
 */
export class ReconcileError extends Error {
  override name = "ReconcileError";
  readonly reason: string;
  readonly terminal: boolean;

  constructor(reason: string, message: string, options: ReconcileErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.terminal = options.terminal ?? false;
  }
}

/**
 * An error that retrying cannot fix until the object changes (invalid spec,
 * a reference to something that must be created by the user): a terminal
 * ReconcileError whose reason does not matter to the caller.
 */
export class TerminalError extends ReconcileError {
  override name = "TerminalError";

  constructor(message: string, options: { reason?: string; cause?: unknown } = {}) {
    super(options.reason ?? "TerminalError", message, { terminal: true, cause: options.cause });
  }
}

/** Whether the controller must not retry `err` until the object changes. */
export function isTerminal(err: unknown): boolean {
  return err instanceof ReconcileError && err.terminal;
}

export function requestKey(req: Request): string {
  return req.namespace ? `${req.namespace}/${req.name}` : req.name;
}
