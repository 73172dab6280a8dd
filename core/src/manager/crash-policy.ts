// The process-level safety net of a manager process. An error nothing handled
// (a promise rejected with no handler, an exception thrown from a callback)
// means the process is in a state nobody reasoned about. Node's default is to
// print a stack and exit at once: every backup left Running, every reconcile
// cut mid-write, and nothing in the log saying what was going on. Instead:
//   1. log it as one error line, with what was running (background tasks);
//   2. stop the manager, its background tasks aborted with a reason that says
//      so (a backup records Failed with it), bounded by `graceMs`;
//   3. exit non-zero, so the Deployment restarts a clean process.
// A second fatal error while stopping exits at once.
import type { Logger } from "../log/index.ts";
import { settledWithin } from "./bounded-wait.ts";

export interface CrashPolicyOptions {
  logger: Logger;
  /** Stops all work; running operations record `reason` as why they stopped. */
  stop: (reason: Error) => Promise<unknown>;
  /** What is running now, for the log line. */
  inFlight?: () => unknown;
  /** Upper bound on `stop` before exiting anyway. Defaults to 10 s. */
  graceMs?: number;
  /** Defaults to process.exit. */
  exit?: (code: number) => void;
  /** The process whose events are handled. Defaults to the current process. */
  process?: Pick<NodeJS.EventEmitter, "on" | "off">;
}

/** The exit code after a fatal error (as Node's own for an uncaught exception). */
export const fatalExitCode = 1;

/** An error that stopped the manager: the message a stopped operation records. */
export class FatalErrorStop extends Error {
  override name = "FatalErrorStop";
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Installs the policy; returns a function that removes it (for tests and embedders). */
export function installCrashPolicy(options: CrashPolicyOptions): () => void {
  const proc = options.process ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const graceMs = options.graceMs ?? 10_000;
  let handling = false;

  const onFatal = (kind: "unhandledRejection" | "uncaughtException") => (err: unknown) => {
    if (handling) {
      options.logger.error("another unexpected error while stopping; exiting now", { kind, err });
      exit(fatalExitCode);
      return;
    }
    handling = true;
    let inFlight: unknown;
    try {
      inFlight = options.inFlight?.();
    } catch {
      inFlight = "unknown";
    }
    options.logger.error("unexpected error: stopping the manager and exiting so that it restarts clean", { kind, err, inFlight });
    const reason = new FatalErrorStop(`the manager hit an unexpected error (${describe(err)}) and restarted`);
    void settledWithin(options.stop(reason), graceMs).then(() => exit(fatalExitCode));
  };

  const rejection = onFatal("unhandledRejection");
  const exception = onFatal("uncaughtException");
  proc.on("unhandledRejection", rejection);
  proc.on("uncaughtException", exception);
  return () => {
    proc.off("unhandledRejection", rejection);
    proc.off("uncaughtException", exception);
  };
}
