import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { parseBindAddress } from "./address.ts";
import { messageOf } from "../errors/index.ts";

/** The address a server actually listens on, after port 0 has been resolved. */
export interface BoundAddress {
  /** As the socket reports it: "127.0.0.1", or "::" / "0.0.0.0" for every interface. */
  host: string;
  port: number;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

// How long stop() lets requests already being answered finish before cutting
// their connections. Probe answers are bounded by the check timeout and a
// scrape takes milliseconds; a client that stalls must not hold up shutdown.
const stopGraceMs = 2_000;

/**
 * The start/stop half shared by the probe and metrics servers: one
 * node:http server, started on a controller-runtime style bind address.
 */
export class HttpListener {
  readonly #name: string;
  readonly #handler: RequestHandler;
  #server: Server | undefined;

  /** `name` appears in error messages ("probe server", "metrics server"). */
  constructor(name: string, handler: RequestHandler) {
    this.#name = name;
    this.#handler = handler;
  }

  /**
   * Listens on `address` (see parseBindAddress). Resolves with where it
   * listens, or `undefined` when the address disables the server ("0", "").
   * Rejects if the address is invalid or cannot be bound.
   */
  async start(address: string): Promise<BoundAddress | undefined> {
    if (this.#server) throw new Error(`${this.#name} already started`);
    const listen = parseBindAddress(address);
    if (!listen) return undefined;

    const handler = this.#handler;
    const server = createServer((req, res) => {
      handler(req, res).catch((err: unknown) => {
        // The handlers answer their own failures; this is the last resort
        // so a bug costs one request, not the process (unhandled rejection).
        if (res.headersSent) {
          res.destroy(err instanceof Error ? err : undefined);
        } else {
          res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8" }).end("internal server error\n");
        }
      });
    });
    this.#server = server;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ host: listen.host, port: listen.port }, () => {
          server.off("error", reject);
          resolve();
        });
      });
    } catch (err) {
      this.#server = undefined;
      const reason = messageOf(err);
      throw new Error(`${this.#name} cannot listen on "${address}": ${reason}`, { cause: err });
    }
    const info = server.address() as AddressInfo;
    return { host: info.address, port: info.port };
  }

  /**
   * Stops listening and resolves once every connection is closed. Idle
   * keep-alive connections are closed at once (a scraper's or kubelet's
   * pooled connection would otherwise keep the server open until its
   * keep-alive timeout); requests in progress get a short grace. Stopping a
   * server that is not running does nothing.
   */
  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), stopGraceMs);
    try {
      await closed;
    } finally {
      clearTimeout(force);
    }
  }
}

/** Answers with a plain-text body; HEAD requests get the headers only (node:http drops the body). */
export function sendText(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res
    .writeHead(status, {
      "Content-Type": "text/plain; charset=utf-8",
      // The bodies may echo a check name from the URL; never let a browser sniff them as HTML.
      "X-Content-Type-Options": "nosniff",
      ...headers,
    })
    .end(body);
}

/** True for GET and HEAD; otherwise answers 405 and returns false. */
export function allowReadOnly(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === "GET" || req.method === "HEAD") return true;
  sendText(res, 405, "method not allowed\n", { Allow: "GET, HEAD" });
  return false;
}
