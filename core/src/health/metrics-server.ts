import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpListener, allowReadOnly, sendText } from "./listener.ts";
import type { BoundAddress } from "./listener.ts";
import { messageOf } from "../errors/index.ts";

/** Produces the scrape body; `Metrics.exposition` from core/src/metrics fits. */
export type MetricsSource = () => Promise<{ contentType: string; body: string }>;

/**
 * Serves `GET /metrics` from a metrics source, on its own port as
 * controller-runtime does (--metrics-bind-address), so metrics can be
 * exposed or firewalled separately from the probes. Any other path is 404,
 * any method but GET/HEAD 405; a source that fails gives 500.
 */
export class MetricsServer {
  readonly #source: MetricsSource;
  readonly #listener: HttpListener;

  constructor(source: MetricsSource) {
    this.#source = source;
    this.#listener = new HttpListener("metrics server", (req, res) => this.#handle(req, res));
  }

  /**
   * Listens on a controller-runtime style address (":8080",
   * "127.0.0.1:8080", port 0 for a free one). Resolves with the bound
   * address, or `undefined` for "0" or "" (metrics disabled).
   */
  start(address: string): Promise<BoundAddress | undefined> {
    return this.#listener.start(address);
  }

  /** Stops listening; see HttpListener.stop. */
  stop(): Promise<void> {
    return this.#listener.stop();
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!allowReadOnly(req, res)) return;
    const { pathname } = new URL(req.url ?? "/", "http://metrics");
    if (pathname !== "/metrics") return sendText(res, 404, "404 page not found\n");
    let exposition: { contentType: string; body: string };
    try {
      exposition = await this.#source();
    } catch (err) {
      const message = messageOf(err);
      return sendText(res, 500, `error gathering metrics: ${message}\n`);
    }
    sendText(res, 200, exposition.body, { "Content-Type": exposition.contentType });
  }
}
