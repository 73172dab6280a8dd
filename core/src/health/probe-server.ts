import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpListener, allowReadOnly, sendText } from "./listener.ts";
import type { BoundAddress } from "./listener.ts";
import { messageOf } from "../errors/index.ts";

/** A health or readiness check: it passes unless it throws or rejects. */
export type Check = () => Promise<void> | void;

export interface ProbeServerOptions {
  /**
   * Milliseconds a check may take before it counts as failed. Default: 5000.
   * Give the Pod's probe a timeoutSeconds above this (the kubelet's default
   * is 1 s) so the kubelet reads our answer, which names the slow check,
   * instead of timing out on its own.
   */
  checkTimeoutMs?: number;
}

/** The two endpoints and what kube-apiserver calls their check sets. */
type Kind = "healthz" | "readyz";

// Names appear in URLs (/readyz/<name>) and in the line-based output, so
// they are kept to characters that need no escaping in either.
const checkNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Serves /healthz (liveness) and /readyz (readiness) in kube-apiserver's
 * format, which controller-runtime also uses:
 *
 * - `GET /healthz` → 200 `ok` when every check passes; otherwise 500 with one
 *   line per check (`[+]ping ok`, `[-]informer-sync failed: <message>`) and
 *   `healthz check failed`.
 * - `?verbose` lists every check on success too, ending `healthz check passed`.
 * - `?exclude=<name>` (repeatable) skips a check.
 * - `GET /healthz/<name>` runs that one check; an unknown name is 404.
 * - Same for /readyz. Any other path is 404, any method but GET/HEAD 405.
 *
 * Unlike controller-runtime, which answers "reason withheld", a failing
 * check's message is shown: it tells whoever reads a failed probe in
 * `kubectl describe pod` why. Checks must therefore not put secrets in their
 * error messages.
 *
 * With no checks registered an endpoint answers as if it had kube-apiserver's
 * always-passing `ping` check.
 */
export class ProbeServer {
  readonly #timeoutMs: number;
  readonly #checks: Record<Kind, Map<string, Check>> = { healthz: new Map(), readyz: new Map() };
  readonly #listener: HttpListener;

  constructor(options: ProbeServerOptions = {}) {
    this.#timeoutMs = options.checkTimeoutMs ?? 5_000;
    this.#listener = new HttpListener("probe server", (req, res) => this.#handle(req, res));
  }

  /** Adds a liveness check, served under /healthz. Throws if the name is taken or not URL-safe. */
  addHealthCheck(name: string, check: Check): void {
    this.#add("healthz", name, check);
  }

  /** Adds a readiness check, served under /readyz. Throws if the name is taken or not URL-safe. */
  addReadyCheck(name: string, check: Check): void {
    this.#add("readyz", name, check);
  }

  /**
   * Listens on a controller-runtime style address (":8081",
   * "127.0.0.1:8081", port 0 for a free one). Resolves with the bound
   * address, or `undefined` for "0" or "" (probes disabled).
   */
  start(address: string): Promise<BoundAddress | undefined> {
    return this.#listener.start(address);
  }

  /** Stops listening; see HttpListener.stop. */
  stop(): Promise<void> {
    return this.#listener.stop();
  }

  #add(kind: Kind, name: string, check: Check): void {
    if (!checkNamePattern.test(name)) {
      throw new Error(`invalid ${kind} check name "${name}": use letters, digits, ".", "_" and "-"`);
    }
    const checks = this.#checks[kind];
    if (checks.has(name)) throw new Error(`${kind} check "${name}" already exists`);
    checks.set(name, check);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!allowReadOnly(req, res)) return;
    const url = new URL(req.url ?? "/", "http://probe");
    const match = /^\/(healthz|readyz)(?:\/(.*))?$/.exec(url.pathname);
    const kind = match?.[1] as Kind | undefined;
    if (!kind) return sendText(res, 404, "404 page not found\n");

    let checks: Array<[string, Check]> = [...this.#checks[kind]].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    if (checks.length === 0) checks = [["ping", () => {}]];

    const sub = match?.[2];
    if (sub) {
      const name = safeDecode(sub);
      const one = checks.find(([n]) => n === name);
      if (!one) return sendText(res, 404, "404 page not found\n");
      const failure = await runCheck(one[1], this.#timeoutMs);
      if (failure === undefined) return sendText(res, 200, "ok");
      return sendText(res, 500, `[-]${name} failed: ${failure}\n${kind} check failed\n`);
    }

    const excluded = new Set(url.searchParams.getAll("exclude"));
    const verbose = url.searchParams.has("verbose");
    const results = await Promise.all(
      checks.map(async ([name, check]) => {
        if (excluded.has(name)) return { line: `[+]${name} excluded: ok`, failed: false };
        const failure = await runCheck(check, this.#timeoutMs);
        return failure === undefined
          ? { line: `[+]${name} ok`, failed: false }
          : { line: `[-]${name} failed: ${failure}`, failed: true };
      }),
    );
    const listing = results.map((r) => `${r.line}\n`).join("");
    // Failures are always listed in full, as kube-apiserver does: the
    // kubelet records the body, and the failing check's name is the point.
    if (results.some((r) => r.failed)) return sendText(res, 500, `${listing}${kind} check failed\n`);
    if (!verbose) return sendText(res, 200, "ok");
    return sendText(res, 200, `${listing}${kind} check passed\n`);
  }
}

/**
 * Runs one check under the timeout. Resolves with undefined when it passed,
 * or with the reason it failed, flattened to one line so it cannot forge
 * other lines of the listing. A check that times out keeps running; its
 * result is ignored.
 */
async function runCheck(check: Check, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    // Called inside then() so that a check throwing synchronously fails like a rejection.
    await Promise.race([Promise.resolve().then(check), timeout]);
    return undefined;
  } catch (err) {
    const message = messageOf(err);
    return message.replace(/\s*[\r\n]+\s*/g, " ") || "failed";
  } finally {
    clearTimeout(timer);
  }
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    // Not valid percent-encoding, so it cannot name a registered check.
    return segment;
  }
}
