// A loopback TCP proxy for fault injection between a client and a server:
// `freeze()` makes the current connections go silent without closing them
// (a half-open connection, as a dead NAT or a vanished peer leaves behind),
// `block()` cuts every connection and refuses new ones, `unblock()` heals,
// `limit()` makes the link slow.
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  private server: Server | undefined;
  private readonly target: { host: string; port: number };
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  private blocked = false;
  private bytesPerSecond: number | undefined;
  port = 0;

  constructor(target: { host: string; port: number }) {
    this.target = target;
  }

  async start(): Promise<number> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
    return this.port;
  }

  private accept(client: Socket): void {
    if (this.blocked) {
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    const pair = { client, upstream, frozen: false };
    this.pairs.add(pair);
    // Chunks held back by limit(); a close waits for them, or a slow link would lose the end of a response.
    let held = 0;
    let closing = false;
    const closeNow = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    const close = () => {
      closing = true;
      if (held === 0) closeNow();
    };
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        // A frozen pair swallows data: both ends see a silent, open connection.
        if (pair.frozen) return;
        if (this.bytesPerSecond === undefined) {
          to.write(chunk);
          return;
        }
        // A slow link: hold the chunk for as long as it takes at the rate, reading nothing meanwhile.
        from.pause();
        held++;
        setTimeout(() => {
          held--;
          if (!pair.frozen && !to.destroyed) to.write(chunk);
          from.resume();
          if (closing && held === 0) closeNow();
        }, (chunk.length / this.bytesPerSecond) * 1000);
      });
    forward(client, upstream);
    forward(upstream, client);
    client.on("close", close).on("error", close);
    upstream.on("close", close).on("error", close);
  }

  /** Existing connections stop carrying data but stay open; new connections work. */
  freeze(): number {
    for (const pair of this.pairs) pair.frozen = true;
    return this.pairs.size;
  }

  /** Each connection carries at most this many bytes per second in each direction (undefined: no limit). */
  limit(bytesPerSecond: number | undefined): void {
    this.bytesPerSecond = bytesPerSecond;
  }

  /** Cuts every connection and refuses new ones until unblock(). */
  block(): void {
    this.blocked = true;
    for (const pair of [...this.pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
  }

  unblock(): void {
    this.blocked = false;
  }

  async stop(): Promise<void> {
    this.block();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
