// A small REST client for the Kubernetes API on top of client-node's
// KubeConfig (which handles kubeconfig files, in-cluster config, client
// certificates, tokens and exec plugins) and undici's dispatchers (not its fetch:
// WHATWG Request/Response objects and web streams cost ~0.4 ms more CPU per request;
// short requests are dispatched with a handler of our own that reads the answer whole,
// watches use undici's request API for its streamed body: docs/performance.md). It exposes exactly the
// verbs a controller runtime needs — paged list, watch with bookmarks,
// optimistic-concurrency update, status subresource, merge patch, server-side
// apply — and reports every request to an optional observer (metrics, tests
// that count writes).
import type { KubeConfig } from "@kubernetes/client-node";
import type { Dispatcher } from "undici";
import { ApiConnections, type Credentials } from "./connections.ts";
import { ApiConnectionError, ApiError } from "./errors.ts";
import type { KubeList, KubeObject } from "./object.ts";
import { resourcePath, type ResourceType } from "./resource.ts";

export type Verb = "GET" | "LIST" | "WATCH" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface RequestObservation {
  verb: Verb;
  path: string;
  /** HTTP status, or 0 when the request failed before an answer. */
  status: number;
  seconds: number;
}

export interface KubeClientOptions {
  kubeConfig: KubeConfig;
  /** Field manager for server-side apply and other writes. Defaults to "stateward". */
  fieldManager?: string;
  /**
   * Timeout of a non-watch request, also the bound on waiting for any answer's headers and for
   * each chunk of a short request's body. Defaults to 30 s (client-go has none; a hung request —
   * e.g. on a pooled connection that went half-open — must not hang a reconcile forever).
   */
  requestTimeoutMs?: number;
  /**
   * How long the credentials read from the kubeconfig (the CA, client certificate and key; the
   * headers client-node's token and exec plugins give) are reused before they are read again; a 401
   * answer drops them at once. Defaults to 1 s (connections.ts, CREDENTIALS_REUSE_MS).
   */
  credentialsReuseMs?: number;
  /** Called after every request. */
  observe?: (o: RequestObservation) => void;
}

export interface ListOptions {
  namespace?: string;
  /** Ask for PartialObjectMetadata: metadata only, no spec/data (e.g. Secrets whose values we must not cache). */
  metadataOnly?: boolean;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  signal?: AbortSignal;
}

export interface WatchOptions {
  namespace?: string;
  /** Watch PartialObjectMetadata only (see ListOptions.metadataOnly). */
  metadataOnly?: boolean;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  /** Server-side timeout of the watch; the server closes it cleanly after this many seconds. */
  timeoutSeconds?: number;
  allowWatchBookmarks?: boolean;
  signal?: AbortSignal;
}

export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: T;
}

// Content negotiation for metadata-only lists and watches (as controller-runtime's metadata client).
const METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

export type PatchType = "merge" | "json" | "strategic" | "apply";
const patchContentType: Record<PatchType, string> = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
  apply: "application/apply-patch+yaml",
};

/** Options of a single-object request. */
export interface CallOptions {
  /** Aborts the request (e.g. a Lease renewal bounded by the renew deadline). */
  signal?: AbortSignal;
}

export interface DeleteOptions {
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  preconditions?: { uid?: string; resourceVersion?: string };
}

interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  accept?: string;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  verb?: Verb;
}

export class KubeClient {
  readonly kubeConfig: KubeConfig;
  readonly fieldManager: string;
  private readonly server: string;
  /** The server's origin and the path it is served under ("" unless the kubeconfig's URL has one): parsed once. */
  private readonly origin: string;
  private readonly basePath: string;
  private readonly timeoutMs: number;
  private readonly observe: ((o: RequestObservation) => void) | undefined;
  /** The shared pool of short requests and the watches' own connections (see connections.ts). */
  readonly connections: ApiConnections;

  constructor(opts: KubeClientOptions) {
    this.kubeConfig = opts.kubeConfig;
    this.fieldManager = opts.fieldManager ?? "stateward";
    this.timeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.observe = opts.observe;
    const cluster = opts.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    this.server = cluster.server.replace(/\/+$/, "");
    let base: URL;
    try {
      base = new URL(this.server);
    } catch {
      throw new Error(`the kubeconfig's server "${cluster.server}" is not a URL (e.g. https://127.0.0.1:6443)`);
    }
    this.origin = base.origin;
    this.basePath = base.pathname.replace(/\/+$/, "");
    this.connections = new ApiConnections(opts.kubeConfig, this.server, { headersMs: this.timeoutMs, bodyMs: this.timeoutMs }, opts.credentialsReuseMs);
  }

  /**
   * Replaces the shared pool and fails the requests running on it: for a caller that found the
   * path to the server dead, e.g. an informer whose watch went silent (see ApiConnections.renew).
   */
  renewConnections(): void {
    this.connections.renew("abort");
  }

  get host(): string {
    return new URL(this.server).host;
  }

  /** What a request carries: where it goes, its headers and body, and the credentials that pick its pool. */
  private async prepare(path: string, opts: RequestOptions): Promise<Prepared> {
    // Built by hand, not with a URL per request (2 µs of 150): the path's parts are encoded by resourcePath.
    let query = "";
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (v !== undefined && v !== "") query += `${query ? "&" : "?"}${k}=${encodeURIComponent(String(v))}`;
    }
    const credentials = await this.connections.credentials();
    const headers: Record<string, string> = { ...credentials.headers, accept: opts.accept ?? "application/json" };
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers["content-type"] = opts.contentType ?? "application/json";
      body = JSON.stringify(opts.body);
    }
    return { origin: this.origin, path: this.basePath + path + query, headers, body, credentials };
  }

  /** A watch's request on a connection of its own, which the caller destroys when the watch ends. */
  private async openWatch(path: string, opts: RequestOptions): Promise<{ res: Answer; dispatcher: Dispatcher }> {
    const req = await this.prepare(path, opts);
    const verb = opts.verb ?? "WATCH";
    const signal = opts.signal;
    const started = performance.now();
    const dispatcher = await this.connections.forWatch();
    try {
      const res = await dispatcher
        .request({ origin: req.origin, path: req.path, method: "GET", headers: req.headers, signal })
        .catch((err: unknown) => {
          throw this.transportError(err, signal);
        });
      this.observe?.({ verb, path, status: res.statusCode, seconds: (performance.now() - started) / 1000 });
      if (res.statusCode === 401) this.connections.forgetCredentials();
      return { res, dispatcher };
    } catch (err) {
      this.observe?.({ verb, path, status: 0, seconds: (performance.now() - started) / 1000 });
      void dispatcher.destroy().catch(() => undefined);
      throw err;
    }
  }

  /**
   * undici's error for a failed connection or answer becomes an ApiConnectionError (its cause);
   * an aborted request's reason (its own timeout, the caller's signal) is thrown as it is.
   */
  private transportError(err: unknown, signal: AbortSignal | undefined): unknown {
    if (signal?.aborted) return signal.reason ?? err;
    return this.connectionError(err);
  }

  private connectionError(err: unknown): unknown {
    if (err instanceof ApiConnectionError || !(err instanceof Error) || typeof (err as { code?: unknown }).code !== "string") return err;
    return new ApiConnectionError(this.server, err);
  }

  /**
   * One short request on the shared pool: its status and whole body. Dispatched with a handler of
   * our own (ShortAnswer) rather than undici's request API, whose answer is a Node stream, an
   * async-hooks resource and an abort listener per request — about a quarter of the client's CPU
   * per request, for a body that is read whole anyway (docs/performance.md, finding 22).
   */
  private async exchange(method: string, path: string, opts: RequestOptions): Promise<{ statusCode: number; text: string }> {
    let answer: ShortAnswer | undefined;
    // One deadline for the whole request, from before its credentials are read to its last byte, a
    // repeat included: it aborts whichever attempt is running.
    const deadline = new Deadline(this.timeoutMs, opts.signal, (reason) => answer?.abort(reason));
    const started = performance.now();
    const verb = opts.verb ?? (method as Verb);
    try {
      const req = await this.prepare(path, opts);
      const dispatcher = await this.connections.pool(req.credentials.material);
      const attempt = async (): Promise<{ statusCode: number; text: string }> => {
        if (deadline.stopped) throw deadline.reason;
        answer = new ShortAnswer();
        try {
          dispatcher.dispatch({ origin: req.origin, path: req.path, method, headers: req.headers, body: req.body }, answer);
        } catch (err) {
          answer.fail(err);
        }
        return answer.done.catch((err: unknown) => {
          throw deadline.stopped ? deadline.reason : this.connectionError(err);
        });
      };
      let res: { statusCode: number; text: string };
      try {
        res = await attempt();
      } catch (err) {
        // A kept-alive connection the server closed or reset just as the request went out (nothing
        // answered): a GET is sent again once, on another connection, as Go's transport does. Not
        // a PUT or DELETE: repeated after it took effect, it would answer 409 or 404.
        if (method !== "GET" || !connectionLost(err) || deadline.stopped) throw err;
        res = await attempt();
      }
      this.observe?.({ verb, path, status: res.statusCode, seconds: (performance.now() - started) / 1000 });
      if (res.statusCode === 401) this.connections.forgetCredentials();
      return res;
    } catch (err) {
      this.observe?.({ verb, path, status: 0, seconds: (performance.now() - started) / 1000 });
      if (timedOut(err)) this.connections.renew("finish");
      throw err;
    } finally {
      deadline.clear();
    }
  }

  /** One request; parses JSON; throws ApiError for a non-2xx answer. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const { statusCode, text } = await this.exchange(method, path, opts);
    if (statusCode < 200 || statusCode >= 300) throw ApiError.fromBody(statusCode, text, `${opts.verb ?? method} ${path}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  async get<T extends KubeObject>(rt: ResourceType, namespace: string | undefined, name: string, opts: CallOptions = {}): Promise<T> {
    return this.request<T>("GET", resourcePath(rt, namespace, name), { signal: opts.signal });
  }

  /** One page of a list. */
  async list<T extends KubeObject>(rt: ResourceType, opts: ListOptions = {}): Promise<KubeList<T>> {
    return this.request<KubeList<T>>("GET", resourcePath(rt, opts.namespace), {
      verb: "LIST",
      signal: opts.signal,
      accept: opts.metadataOnly ? METADATA_LIST_ACCEPT : undefined,
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
      },
    });
  }

  /**
   * A watch stream: yields events until the server closes it, the signal
   * aborts, or the connection fails (which throws). An HTTP 410 throws an
   * ApiError with status 410; an ERROR event is yielded as is.
   */
  async *watch<T extends KubeObject>(rt: ResourceType, opts: WatchOptions): AsyncGenerator<WatchEvent<T>> {
    const path = resourcePath(rt, opts.namespace);
    const { res, dispatcher } = await this.openWatch(path, {
      verb: "WATCH",
      signal: opts.signal,
      accept: opts.metadataOnly ? METADATA_ACCEPT : undefined,
      query: {
        watch: true,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: opts.allowWatchBookmarks,
        timeoutSeconds: opts.timeoutSeconds,
      },
    });
    // The watch's own connection goes with it, whichever way it ends: a restarted watch opens a new one.
    try {
      if (!ok(res)) throw ApiError.fromBody(res.statusCode, await res.body.text(), `WATCH ${path}`);
      const decoder = new TextDecoder();
      let buffered = "";
      for await (const chunk of res.body) {
        buffered += decoder.decode(chunk as Uint8Array, { stream: true });
        let nl: number;
        while ((nl = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (line) yield JSON.parse(line) as WatchEvent<T>;
        }
      }
    } finally {
      void dispatcher.destroy().catch(() => undefined);
    }
  }

  async create<T extends KubeObject>(rt: ResourceType, obj: T, opts: CallOptions = {}): Promise<T> {
    return this.request<T>("POST", resourcePath(rt, obj.metadata.namespace), {
      signal: opts.signal,
      body: { ...obj, apiVersion: rt.apiVersion, kind: rt.kind },
      query: { fieldManager: this.fieldManager },
    });
  }

  /**
   * PUT with the object's resourceVersion: the server refuses it with 409
   * Conflict if the object changed since it was read — never a blind overwrite.
   */
  async update<T extends KubeObject>(rt: ResourceType, obj: T, opts: CallOptions = {}): Promise<T> {
    return this.put(rt, obj, undefined, opts.signal);
  }

  /** PUT to the status subresource (only `status` is taken from the body). */
  async updateStatus<T extends KubeObject>(rt: ResourceType, obj: T): Promise<T> {
    return this.put(rt, obj, "status");
  }

  private async put<T extends KubeObject>(rt: ResourceType, obj: T, subresource?: string, signal?: AbortSignal): Promise<T> {
    if (!obj.metadata.resourceVersion) throw new Error(`update of ${rt.kind} ${obj.metadata.name ?? ""} without a resourceVersion`);
    // Sent without managedFields: the server then keeps its own as they are (an update replaces them
    // only when it carries some). An object as a write answered it holds them — half of a
    // DatabaseUser's JSON — and sending them back made the API server decode and compare them again,
    // ~0.5 ms of its time per status write (docs/performance.md, finding 28).
    const { managedFields: _kept, ...metadata } = obj.metadata;
    return this.request<T>("PUT", resourcePath(rt, obj.metadata.namespace, obj.metadata.name, subresource), {
      signal,
      body: { ...obj, metadata, apiVersion: rt.apiVersion, kind: rt.kind },
      query: { fieldManager: this.fieldManager },
    });
  }

  async patch<T extends KubeObject>(
    rt: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type: Exclude<PatchType, "apply"> = "merge",
    subresource?: string,
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(rt, namespace, name, subresource), {
      body: patch,
      contentType: patchContentType[type],
      query: { fieldManager: this.fieldManager },
    });
  }

  /**
   * Server-side apply of an object this manager owns: the fields listed in
   * `obj` become ours; fields others manage are left alone. `force` takes
   * over conflicting fields (right for objects we own outright).
   */
  async apply<T extends KubeObject>(rt: ResourceType, obj: T, opts: { force?: boolean; subresource?: string } = {}): Promise<T> {
    const name = obj.metadata.name;
    if (!name) throw new Error(`server-side apply of a ${rt.kind} without a name`);
    return this.request<T>("PATCH", resourcePath(rt, obj.metadata.namespace, name, opts.subresource), {
      body: { ...obj, apiVersion: rt.apiVersion, kind: rt.kind },
      contentType: patchContentType.apply,
      query: { fieldManager: this.fieldManager, force: opts.force ?? true },
    });
  }

  async delete(rt: ResourceType, namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<void> {
    await this.request("DELETE", resourcePath(rt, namespace, name), {
      body: opts.propagationPolicy || opts.preconditions
        ? { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: opts.propagationPolicy, preconditions: opts.preconditions }
        : undefined,
    });
  }
}

/**
 * A request's own timeout, cleared as soon as its answer is read. Not `AbortSignal.timeout`: that
 * timer cannot be cancelled, so each request's signal and timer stayed alive for the whole timeout
 * (30 s) after the request was done — about 2 MiB of heap kept for 8,000 requests, and 6 µs of CPU
 * each against ~1.4 (docs/performance.md, finding 20). The reason is the same DOMException
 * "TimeoutError" that `AbortSignal.timeout` gives, which callers (the CLI's exit codes) recognise.
 */
class Deadline {
  /** The request was aborted: by its own timeout (reason: a DOMException "TimeoutError") or by the caller. */
  stopped = false;
  reason: unknown;
  private readonly timer: NodeJS.Timeout;
  private readonly unlink: (() => void) | undefined;
  private readonly onAbort: (reason: unknown) => void;

  constructor(ms: number, caller: AbortSignal | undefined, onAbort: (reason: unknown) => void) {
    this.onAbort = onAbort;
    this.timer = setTimeout(() => this.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms);
    if (caller === undefined) return;
    if (caller.aborted) {
      this.abort(caller.reason);
      return;
    }
    const follow = () => this.abort(caller.reason);
    caller.addEventListener("abort", follow, { once: true });
    this.unlink = () => caller.removeEventListener("abort", follow);
  }

  private abort(reason: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reason = reason ?? new DOMException("This operation was aborted", "AbortError");
    this.onAbort(this.reason);
  }

  clear(): void {
    clearTimeout(this.timer);
    this.unlink?.();
  }
}

/**
 * A short answer read whole: undici's dispatch handler, settled once — with the status and the body
 * as text when the answer ends, or with the error (a failed connection, undici's own timeouts, or
 * the reason it was aborted with).
 */
class ShortAnswer implements Dispatcher.DispatchHandler {
  readonly done: Promise<{ statusCode: number; text: string }>;
  private settle!: (answer: { statusCode: number; text: string }) => void;
  private reject!: (err: unknown) => void;
  private controller: Dispatcher.DispatchController | undefined;
  private aborted: Error | undefined;
  private statusCode = 0;
  private chunks: Buffer[] = [];

  constructor() {
    this.done = new Promise((resolve, reject) => {
      this.settle = resolve;
      this.reject = reject;
    });
  }

  /** Stops the request (queued, running or answering); the promise rejects with `reason`. */
  abort(reason: unknown): void {
    this.aborted ??= reason instanceof Error ? reason : new Error(String(reason));
    this.controller?.abort(this.aborted);
    this.reject(reason);
  }

  fail(err: unknown): void {
    this.reject(err);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Aborted while it waited for a connection: it never goes out.
    if (this.aborted) controller.abort(this.aborted);
    else this.controller = controller;
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    // A 1xx is not the answer; the final one follows on the same request.
    if (statusCode < 200) return;
    this.statusCode = statusCode;
    this.chunks = [];
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.chunks = [];
    this.settle({ statusCode: this.statusCode, text: body.toString("utf8") });
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.chunks = [];
    this.reject(err);
  }
}

const LOST_CONNECTION = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"]);

/** An answer of undici's request API (a watch's). */
type Answer = Dispatcher.ResponseData;

/** What prepare() makes of a request. */
interface Prepared {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
  credentials: Credentials;
}

const ok = (res: Answer): boolean => res.statusCode >= 200 && res.statusCode < 300;

/** The connection closed or reset under the request, before an answer. */
function connectionLost(err: unknown): boolean {
  return err instanceof ApiConnectionError && LOST_CONNECTION.has(err.code);
}

/** The request's own timeout, or undici's headers or body timeout. */
function timedOut(err: unknown): boolean {
  if (err instanceof ApiConnectionError) return err.code === "UND_ERR_HEADERS_TIMEOUT" || err.code === "UND_ERR_BODY_TIMEOUT";
  return (err as { name?: string } | undefined)?.name === "TimeoutError";
}
