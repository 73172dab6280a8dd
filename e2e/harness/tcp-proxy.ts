// A loopback TCP proxy for fault injection between a client and a server:
// `freeze()` makes the current connections go silent without closing them
// (a half-open connection, as a dead NAT or a vanished peer leaves behind),
// `block()` cuts every connection and refuses new ones, `unblock()` heals,
// `throttle()` limits the bandwidth of all connections together, and
// `leaveUnanswered()` lets chosen plain-HTTP requests (or plain MySQL
// queries) reach the server but never their answers (a request done whose
// client saw it fail), and `damageAnswers()` flips a bit in the body of chosen
// plain-HTTP answers (bytes damaged on the way).
import { createServer, connect, type Server, type Socket } from "node:net";

/** The first line of a plain HTTP/1.1 request, as a client writes it at the start of a chunk. */
const httpRequestLine = /^[A-Z]+ \S+ HTTP\/1\.1\r\n/;

export class TcpProxy {
  private server: Server | undefined;
  private readonly target: { host: string; port: number };
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  private blocked = false;
  private freezeNew: false | "silent" | "unanswered" = false;
  private bytesPerSecond = 0;
  private unansweredRequests: RegExp | undefined;
  private cutUnanswered = false;
  private damagedRequests: RegExp | undefined;
  private answersToDamage = 0;
  /** Answers damaged by damageAnswers so far. */
  damaged = 0;
  /** Requests left unanswered by leaveUnanswered so far. */
  unanswered = 0;
  /** When the shared link is free again (throttled): each chunk waits its turn. */
  private linkFreeAt = 0;
  port = 0;
  /** Connections accepted and forwarded so far (not those refused while blocked). */
  accepted = 0;

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
    this.accepted++;
    const upstream = connect(this.target.port, this.target.host);
    const pair = { client, upstream, frozen: this.freezeNew === "silent" };
    this.pairs.add(pair);
    // "unanswered": the client's writes go through, the server's only until the client's second
    // write (its TLS handshake flights): a request reaches the server and its answer never returns.
    const unanswered = this.freezeNew === "unanswered";
    let clientWrites = 0;
    // leaveUnanswered: from a matching request on, the server's bytes on this connection are dropped.
    let swallowing = false;
    // damageAnswers: "head" while the answer's head is still coming, "body" when its body starts with the next chunk.
    let damaging: false | "head" | "body" = false;
    client.on("data", (chunk: Buffer) => {
      clientWrites++;
      const head = chunk.toString("latin1");
      if (!swallowing && this.unansweredRequests?.test(head)) {
        swallowing = true;
        this.unanswered++;
      }
      if (this.answersToDamage > 0 && this.damagedRequests?.test(head)) {
        this.answersToDamage--;
        damaging = "head";
        headTail = Buffer.alloc(0);
      } else if (httpRequestLine.test(head)) {
        // Another request on this connection: an earlier answer without a body is not damaged later.
        damaging = false;
      }
    });
    // Flips the lowest bit of the answer's first body byte; Content-Length and the headers stay as sent.
    // The head's last bytes are kept, as its blank line may be split between two chunks.
    let headTail = Buffer.alloc(0);
    const damage = (chunk: Buffer): void => {
      let at = 0;
      if (damaging === "head") {
        const seen = Buffer.concat([headTail, chunk]);
        const end = seen.indexOf("\r\n\r\n");
        if (end < 0) {
          headTail = seen.subarray(-3);
          return;
        }
        at = end + 4 - headTail.length;
        damaging = "body";
      }
      if (at < chunk.length) {
        chunk[at]! ^= 0x01;
        damaging = false;
        this.damaged++;
      }
    };
    // Throttled chunks wait for their turn, as in a slow link's send buffer. A client that closes
    // loses what it had not sent yet (its bytes never reach the server); a server that closes
    // right after its answer (an S3 server does) closes the client once the answer is delivered.
    let answersDelayed = 0;
    let serverClosed = false;
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        // A frozen pair swallows data: both ends see a silent, open connection.
        if (pair.frozen) return;
        if (unanswered && from === upstream && clientWrites >= 2) return;
        if (damaging && !swallowing && from === upstream) damage(chunk);
        if (swallowing && from === upstream) {
          // The server answered (it did the request): the client only sees its connection drop.
          if (this.cutUnanswered) close();
          return;
        }
        if (!this.bytesPerSecond) {
          to.write(chunk);
          return;
        }
        const now = Date.now();
        this.linkFreeAt = Math.max(now, this.linkFreeAt) + (chunk.length / this.bytesPerSecond) * 1000;
        if (from === upstream) answersDelayed++;
        from.pause();
        setTimeout(() => {
          if (from === upstream) answersDelayed--;
          // A client that closed has closed the server side too (see close): its chunk is dropped.
          if (!pair.frozen && !to.destroyed) to.write(chunk);
          from.resume();
          if (serverClosed && answersDelayed === 0) client.end(() => close());
        }, this.linkFreeAt - now);
      });
    forward(client, upstream);
    forward(upstream, client);
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", close).on("error", close);
    const serverGone = () => {
      if (answersDelayed > 0) serverClosed = true;
      else close();
    };
    upstream.on("close", serverGone).on("error", serverGone);
  }

  /**
   * Existing connections stop carrying data but stay open; new connections work, unless
   * `newConnections` says otherwise: "silent" — accepted, and nothing flows (the TLS handshake
   * hangs until the client's connect timeout); "unanswered" — the handshake completes and requests
   * reach the server, but no answer comes back (an overloaded or partitioned server: each request
   * hangs until its own timeout).
   */
  freeze(opts: { newConnections?: "silent" | "unanswered" } = {}): number {
    for (const pair of this.pairs) pair.frozen = true;
    this.freezeNew = opts.newConnections ?? false;
    return this.pairs.size;
  }

  /**
   * Plain HTTP: every request whose head matches `request` (say /^PUT \S*\/manifest\.json/m)
   * reaches the server, which does it, but its answer never comes back — nor anything after it
   * on that connection: the client times out on a request that was done. Undefined ends it.
   * (The head is matched within one chunk, as an HTTP client writes it.)
   *
   * With `cut`, the connection is closed once the server's answer arrives
   * (dropped): for a client that would wait for it without end, as a MySQL
   * client does (its COM_QUERY carries the SQL in clear on an unencrypted
   * connection, so `request` can match a statement, say /RENAME TABLE/).
   */
  leaveUnanswered(request: RegExp | undefined, opts: { cut?: boolean } = {}): void {
    this.unansweredRequests = request;
    this.cutUnanswered = opts.cut ?? false;
  }

  /**
   * Plain HTTP: the answers to the next `times` requests whose head matches `request` arrive with the
   * first byte of their body altered (meant for answers with a Content-Length body, such as a GET of an
   * object: the bytes arrive whole and on time, but not as the server sent them).
   */
  damageAnswers(request: RegExp | undefined, times = 1): void {
    this.damagedRequests = request;
    this.answersToDamage = request ? times : 0;
  }

  /** Limits all connections together to `bytesPerSecond` in each direction's sum (0 lifts the limit). */
  throttle(bytesPerSecond: number): void {
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
    this.freezeNew = false;
  }

  async stop(): Promise<void> {
    this.block();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
