// Connections to the API server. client-node's applySecurityAuthentication builds a new undici
// Agent for every request, so every request paid a new TCP connection and TLS handshake with a
// client certificate, on both ends (docs/performance.md, finding 1). Here:
//
// - short requests share one keep-alive pool for as long as the TLS material (CA, client
//   certificate and key, proxy) stays the same; it is replaced when the material changes (a
//   rotated certificate file, an exec plugin's new certificate). Headers — bearer tokens, exec
//   and OIDC plugins, basic auth — need no new pool;
// - the credentials themselves are read from the kubeconfig at most once a second (and again at
//   once after the server answered 401): client-node reads the CA, certificate and key files the
//   kubeconfig names (in a pod, the service account's CA) synchronously and re-encodes the material
//   at each call, ~7 µs of the manager's only thread per request (docs/performance.md, finding 37).
//   A rotated CA, certificate or key file is in use within a second. Tokens keep client-node's own
//   caching under this: a token file is re-read once a minute (as client-go does), an exec
//   plugin's token kept until its expiry — which this second can outlast: a request then gets a
//   401, and the next one reads again;
// - every watch gets a connection of its own, destroyed when the watch ends, is aborted or fails:
//   a watch restarted after its connection went silent never goes back onto a dead connection;
// - a pooled connection that went half-open cannot hang a request for longer than the request
//   timeout, and the pool is replaced when a request on it timed out (its idle connections
//   dropped) or a watch was found silent (its running requests failed at once too): the path to
//   the server they share may be dead.
import type { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import { RequestContext } from "@kubernetes/client-node/dist/gen/http/http.js";
import type { RequestOptions as HttpsRequestOptions } from "node:https";
import { Agent, type Dispatcher } from "undici";

/** What a request needs: its headers, and the material that picks the pool carrying it. */
export interface Credentials {
  headers: Record<string, string>;
  material: TlsMaterial;
}

/** What a connection is made of: a pool serves only requests with the same material. */
export interface TlsMaterial {
  ca?: unknown;
  cert?: unknown;
  key?: unknown;
  pfx?: unknown;
  passphrase?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
  proxyUrl?: string;
}

/**
 * How long credentials read from the kubeconfig are reused. Short next to any rotation (a
 * projected service-account token is renewed hours before it expires; a certificate file is
 * rewritten before the old one expires), long next to the time between two requests under load.
 */
export const CREDENTIALS_REUSE_MS = 1_000;

export interface ConnectionTimeouts {
  /** Until the answer's headers arrive, for short requests and watches alike. */
  headersMs: number;
  /** Between two chunks of a short request's body (a watch's silence is the informer's watchdog's to bound). */
  bodyMs: number;
}

// Buffers (from files or base64 data) compared by content, anything else by identity: cheaper
// than the JSON of every certificate the pool key used to be (docs/performance.md).
function sameValue(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  return a === b;
}

function sameMaterial(a: TlsMaterial, b: TlsMaterial): boolean {
  return (Object.keys({ ...a, ...b }) as (keyof TlsMaterial)[]).every((k) => sameValue(a[k], b[k]));
}

export class ApiConnections {
  private shared: { material: TlsMaterial; dispatcher: Promise<Dispatcher> } | undefined;
  private readonly kubeConfig: KubeConfig;
  private readonly server: string;
  private readonly timeouts: ConnectionTimeouts;
  private readonly reuseMs: number;
  /** The credentials last read, and when (performance.now()): shared by the requests of the next reuseMs. */
  private current: { readAt: number; credentials: Promise<Credentials> } | undefined;
  /** How many dispatchers were made (shared pools and watch connections): for tests. */
  readonly made = { pools: 0, watches: 0 };

  constructor(kubeConfig: KubeConfig, server: string, timeouts: ConnectionTimeouts, reuseMs = CREDENTIALS_REUSE_MS) {
    this.kubeConfig = kubeConfig;
    this.server = server;
    this.timeouts = timeouts;
    this.reuseMs = reuseMs;
  }

  /**
   * The kubeconfig's credentials, read at most once per reuseMs (a token file, a certificate file or
   * an exec plugin may have rotated them since). A failed read is not kept: the next request reads again.
   */
  credentials(): Promise<Credentials> {
    if (this.current && performance.now() - this.current.readAt < this.reuseMs) return this.current.credentials;
    const read = this.read();
    // Requests made while it is read share it; its age counts from when it arrived (an exec plugin
    // may take longer than reuseMs to answer).
    const current = { readAt: performance.now(), credentials: read };
    this.current = current;
    read.then(
      () => {
        current.readAt = performance.now();
      },
      () => {
        if (this.current === current) this.current = undefined;
      },
    );
    return read;
  }

  /** The server refused the credentials (401): the next request reads them again, whatever their age. */
  forgetCredentials(): void {
    this.current = undefined;
  }

  private async read(): Promise<Credentials> {
    const tls: HttpsRequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(tls);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(tls.headers ?? {})) if (value !== undefined) headers[name] = String(value);
    if (tls.auth) headers.Authorization = `Basic ${Buffer.from(tls.auth).toString("base64")}`;
    const material: TlsMaterial = { ca: tls.ca, cert: tls.cert, key: tls.key, pfx: tls.pfx, passphrase: tls.passphrase };
    if (tls.rejectUnauthorized !== undefined) material.rejectUnauthorized = tls.rejectUnauthorized;
    if (tls.servername !== undefined) material.servername = tls.servername;
    const proxyUrl = this.kubeConfig.getCurrentCluster()?.proxyUrl;
    if (proxyUrl) material.proxyUrl = proxyUrl;
    return { headers, material };
  }

  /** The shared keep-alive pool for short requests with this material. */
  pool(material: TlsMaterial): Promise<Dispatcher> {
    if (this.shared && (this.shared.material === material || sameMaterial(this.shared.material, material))) return this.shared.dispatcher;
    this.made.pools++;
    this.replaceShared({ material, dispatcher: this.dispatcher({ headersTimeout: this.timeouts.headersMs, bodyTimeout: this.timeouts.bodyMs }) });
    return this.shared!.dispatcher;
  }

  /**
   * Replaces the shared pool: the next short request opens a new connection. Its idle connections
   * close now; its running requests finish (or time out) first with "finish" — after one of them
   * timed out — or fail at once with "abort" — when a watch went silent: the path they share is
   * most likely dead, and each would otherwise hang until its own timeout (holding its reconcile,
   * and with it the next reconcile of the same object).
   */
  renew(running: "finish" | "abort"): void {
    this.replaceShared(undefined, running);
  }

  /** A connection of its own for one watch; the caller destroys it when the watch ends. */
  forWatch(): Promise<Dispatcher> {
    this.made.watches++;
    // bodyTimeout 0: a watch is quiet between events for as long as nothing changes.
    return this.dispatcher({ headersTimeout: this.timeouts.headersMs, bodyTimeout: 0 });
  }

  private replaceShared(next: { material: TlsMaterial; dispatcher: Promise<Dispatcher> } | undefined, running: "finish" | "abort" = "finish"): void {
    const previous = this.shared?.dispatcher;
    this.shared = next;
    // "finish": requests still on the old pool complete first; its idle connections close now.
    void previous?.then((d) => (running === "abort" ? d.destroy() : d.close())).catch(() => undefined);
  }

  /**
   * client-node's own dispatcher for the kubeconfig's material (direct, HTTP(S) or SOCKS proxy,
   * TCP keep-alive probes every 30 s), made once per pool or watch instead of once per request,
   * with bounded headers and body timeouts (undici's defaults are 300 s each) on every request it
   * carries.
   */
  private async dispatcher(timeouts: { headersTimeout: number; bodyTimeout: number }): Promise<Dispatcher> {
    const ctx = new RequestContext(this.server, "GET");
    await this.kubeConfig.applySecurityAuthentication(ctx);
    // No TLS material at all (plain HTTP to a test server): client-node leaves it to fetch's global one.
    const base = ctx.getDispatcher() ?? new Agent();
    return base.compose((dispatch) => (opts, handler) => dispatch({ ...opts, ...timeouts }, handler));
  }
}
