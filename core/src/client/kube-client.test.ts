// KubeClient against a local HTTPS server that asks for a client certificate,
// as kube-apiserver does: every request must be authenticated, and requests
// must share connections instead of paying a TCP + TLS handshake (with a
// client certificate) each — on both ends (docs/performance.md) — while every
// watch has a connection of its own, and a rotated certificate a new pool.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node/dist/config.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KubeClient } from "./kube-client.ts";
import { resourceType } from "./resource.ts";

const dir = mkdtempSync(join(tmpdir(), "kube-client-test-"));
const pem = (name: string) => readFileSync(join(dir, name));
const b64 = (name: string) => pem(name).toString("base64");

function openssl(args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
}

let server: Server;
let url: string;
let connections = 0;
const seen: { authorization?: string; clientCert: boolean; subject?: string; url?: string }[] = [];
const openSockets = new Set<Socket>();
/** Requests answered on each connection so far (to drop the second one on a kept-alive connection). */
const served = new WeakMap<object, number>();
let dropReused = false;
/** The bodies of the PUTs received, parsed. */
const putBodies: Record<string, unknown>[] = [];

beforeAll(async () => {
  openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca"]);
  for (const [name, ext] of [["server", "subjectAltName=IP:127.0.0.1"], ["client", "extendedKeyUsage=clientAuth"], ["rotated", "extendedKeyUsage=clientAuth"]] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`]);
    openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "1", "-extfile", `${name}.ext`]);
  }
  server = createServer({ key: pem("server.key"), cert: pem("server.crt"), ca: pem("ca.crt"), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const socket = req.socket as TLSSocket;
    const n = (served.get(socket) ?? 0) + 1;
    served.set(socket, n);
    // The server closing a kept-alive connection just as the next request arrives, unanswered.
    if (dropReused && n > 1) {
      socket.destroy();
      return;
    }
    seen.push({ authorization: req.headers.authorization, clientCert: socket.authorized === true, subject: String(socket.getPeerCertificate().subject?.CN), url: req.url });
    if (req.method === "PUT") {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => putBodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>));
    }
    res.setHeader("content-type", "application/json");
    // An API server that takes the request and never answers it.
    if (req.url?.includes("/never-answered")) return;
    // An answer written in many pieces, some after a pause (many frames, many reads on the client).
    if (req.url?.includes("/in-pieces")) {
      const items = Array.from({ length: 2_000 }, (_, i) => ({ metadata: { name: `item-${i}`, namespace: "ns" }, data: { value: "é".repeat(40) } }));
      const text = JSON.stringify({ apiVersion: "v1", kind: "ConfigMapList", metadata: {}, items });
      const bytes = Buffer.from(text);
      const pieces = 20;
      const size = Math.ceil(bytes.length / pieces);
      let i = 0;
      const next = () => {
        // Cut inside multi-byte characters too: the client must join bytes, not strings.
        res.write(bytes.subarray(i * size, (i + 1) * size));
        if (++i < pieces) setTimeout(next, i % 5 === 0 ? 10 : 0);
        else res.end();
      };
      next();
      return;
    }
    if (req.url?.includes("/unauthorized")) {
      res.statusCode = 401;
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "Unauthorized", message: "Unauthorized", code: 401 }));
      return;
    }
    if (req.url?.includes("/refused")) {
      res.statusCode = 409;
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "Conflict", message: "the object has been modified", code: 409 }));
      return;
    }
    if (req.url?.includes("watch=true")) {
      // A watch: one event, then the stream stays open until the client goes.
      res.write(`${JSON.stringify({ type: "ADDED", object: { metadata: { name: "x", namespace: "ns" } } })}\n`);
      return;
    }
    res.end(JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "ns" } }));
  });
  server.on("secureConnection", (socket) => {
    connections++;
    openSockets.add(socket);
    socket.on("close", () => openSockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  rmSync(dir, { recursive: true, force: true });
});

function kubeConfig(user: Record<string, string>, server = url): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server, caData: b64("ca.crt"), skipTLSVerify: false }],
    users: [{ name: "u", ...user }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

const configMaps = resourceType("v1", "ConfigMap", "configmaps");

describe("KubeClient connections", () => {
  it("authenticates every request with the client certificate and reuses one connection", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }) });
    connections = 0;
    seen.length = 0;
    for (let i = 0; i < 20; i++) await client.get(configMaps, "ns", "x");
    await Promise.all(Array.from({ length: 10 }, () => client.get(configMaps, "ns", "x")));
    expect(seen).toHaveLength(30);
    expect(seen.every((s) => s.clientCert)).toBe(true);
    // Sequential requests share one; the 10 concurrent ones may open a few more.
    expect(connections).toBeLessThanOrEqual(11);
    expect(connections).toBeGreaterThanOrEqual(1);
  });

  it("sends the current token with every request", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key"), token: "t0ken" }) });
    seen.length = 0;
    connections = 0;
    for (let i = 0; i < 5; i++) await client.get(configMaps, "ns", "x");
    expect(seen.map((s) => s.authorization)).toEqual(Array(5).fill("Bearer t0ken"));
    // Before: one connection per request.
    expect(connections).toBeLessThan(5);
  });
});

describe("KubeClient connections beyond the shared pool", () => {
  it("opens a connection of its own for every watch and closes it when the watch ends", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }) });
    await client.get(configMaps, "ns", "x");
    connections = 0;
    for (let i = 0; i < 2; i++) {
      const watch = client.watch(configMaps, { namespace: "ns" });
      expect((await watch.next()).value).toMatchObject({ type: "ADDED" });
      const open = openSockets.size;
      await watch.return(undefined);
      // The watch's connection is destroyed, not handed back to a pool.
      await waitUntil(() => openSockets.size === open - 1);
    }
    expect(connections).toBe(2);
    // Short requests still go over the pool's kept-alive connection.
    await client.get(configMaps, "ns", "x");
    expect(connections).toBe(2);
  });

  it("moves to a new pool when the client certificate file is rotated", async () => {
    const certFile = join(dir, "current.crt");
    const keyFile = join(dir, "current.key");
    writeFileSync(certFile, pem("client.crt"));
    writeFileSync(keyFile, pem("client.key"));
    const client = new KubeClient({ kubeConfig: kubeConfig({ certFile, keyFile }), credentialsReuseMs: 100 });
    seen.length = 0;
    connections = 0;
    for (let i = 0; i < 3; i++) await client.get(configMaps, "ns", "x");
    const beforeRotation = connections;
    writeFileSync(certFile, pem("rotated.crt"));
    writeFileSync(keyFile, pem("rotated.key"));
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (let i = 0; i < 3; i++) await client.get(configMaps, "ns", "x");
    expect(seen.map((s) => s.subject)).toEqual(["client", "client", "client", "rotated", "rotated", "rotated"]);
    // A new pool, with connections of its own (undici may open a second one while it releases the first).
    expect(connections).toBeGreaterThan(beforeRotation);
    expect(client.connections.made.pools).toBe(2);
  });

  it("reads the credentials once per reuse interval, and again at once when the server answers 401", async () => {
    const certFile = join(dir, "reused.crt");
    const keyFile = join(dir, "reused.key");
    writeFileSync(certFile, pem("client.crt"));
    writeFileSync(keyFile, pem("client.key"));
    const client = new KubeClient({ kubeConfig: kubeConfig({ certFile, keyFile }), credentialsReuseMs: 60_000 });
    seen.length = 0;
    await client.get(configMaps, "ns", "x");
    writeFileSync(certFile, pem("rotated.crt"));
    writeFileSync(keyFile, pem("rotated.key"));
    // Within the interval the files are not read again: the old certificate is still presented.
    for (let i = 0; i < 3; i++) await client.get(configMaps, "ns", "x");
    // Refused: the next request reads the kubeconfig again and presents the rotated certificate.
    await expect(client.get(configMaps, "ns", "unauthorized")).rejects.toMatchObject({ status: 401 });
    await client.get(configMaps, "ns", "x");
    expect(seen.map((s) => s.subject)).toEqual(["client", "client", "client", "client", "client", "rotated"]);
    expect(client.connections.made.pools).toBe(2);
  });

  it("sends a GET again when its kept-alive connection was closed under it, but not a PUT", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }) });
    dropReused = true;
    try {
      seen.length = 0;
      for (let i = 0; i < 3; i++) await client.get(configMaps, "ns", "x");
      expect(seen).toHaveLength(3);
      await expect(
        client.update(configMaps, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "ns", resourceVersion: "1" } }),
      ).rejects.toThrow();
    } finally {
      dropReused = false;
    }
  });
});

describe("KubeClient request paths", () => {
  it("sends a list's selectors encoded, under the path the kubeconfig's server has, and refuses a server that is not a URL", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }, `${url}/k8s/clusters/c-1/`) });
    seen.length = 0;
    await client.list(configMaps, { namespace: "team a", labelSelector: "tier in (web,api),!canary", fieldSelector: "metadata.name=x", continue: "eyJ2Ijo+/=", limit: 500 });
    const sent = new URL(seen[0]!.url!, url);
    expect(sent.pathname).toBe("/k8s/clusters/c-1/api/v1/namespaces/team%20a/configmaps");
    // What the server reads back, as Go's url.ParseQuery does.
    expect(Object.fromEntries(sent.searchParams)).toEqual({ labelSelector: "tier in (web,api),!canary", fieldSelector: "metadata.name=x", continue: "eyJ2Ijo+/=", limit: "500" });
    expect(() => new KubeClient({ kubeConfig: kubeConfig({ token: "t" }, "127.0.0.1:6443") })).toThrow(/server "127.0.0.1:6443" is not a URL/);
  });
});

describe("KubeClient answers", () => {
  it("reads an answer that arrives in many pieces whole, and a refusal as an ApiError with the server's reason", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }) });
    const list = await client.request<{ items: { metadata: { name: string }; data: { value: string } }[] }>("GET", "/api/v1/namespaces/ns/configmaps/in-pieces");
    expect(list.items).toHaveLength(2_000);
    expect(list.items[1_999]!.metadata.name).toBe("item-1999");
    expect(list.items.every((item) => item.data.value === "é".repeat(40))).toBe(true);
    const err: unknown = await client.get(configMaps, "ns", "refused").catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 409, reason: "Conflict" });
    expect(String((err as Error).message)).toContain("the object has been modified");
  });
});

describe("KubeClient updates", () => {
  it("sends an update without the object's managedFields (the server keeps its own), everything else as given", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }) });
    putBodies.length = 0;
    // An object as a PATCH answered it: with the server's managedFields.
    const managedFields = [{ manager: "stateward", operation: "Update", apiVersion: "v1", fieldsType: "FieldsV1", fieldsV1: { "f:data": { "f:a": {} } } }];
    const obj = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "ns", resourceVersion: "7", labels: { app: "a" }, managedFields }, data: { a: "1" } };
    await client.update(configMaps, obj);
    await client.updateStatus(configMaps, obj);
    expect(putBodies).toHaveLength(2);
    for (const body of putBodies) {
      expect(body).toEqual({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "ns", resourceVersion: "7", labels: { app: "a" } }, data: { a: "1" } });
    }
    expect(obj.metadata.managedFields).toBe(managedFields); // the caller's object is left as it was
  });
});

describe("KubeClient request timeout", () => {
  it("fails a request the server never answers after requestTimeoutMs, as the TimeoutError the CLI reports, and the next request still succeeds", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }), requestTimeoutMs: 400 });
    const started = Date.now();
    const err: unknown = await client.get(configMaps, "ns", "never-answered").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DOMException);
    expect((err as DOMException).name).toBe("TimeoutError");
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await client.get(configMaps, "ns", "x")).metadata.name).toBe("x");
  });

  it("stops a request when the caller's signal aborts, with the caller's reason, long before the timeout", async () => {
    const client = new KubeClient({ kubeConfig: kubeConfig({ certData: b64("client.crt"), keyData: b64("client.key") }), requestTimeoutMs: 30_000 });
    const caller = new AbortController();
    setTimeout(() => caller.abort(new Error("renew deadline passed")), 200);
    const started = Date.now();
    await expect(client.get(configMaps, "ns", "never-answered", { signal: caller.signal })).rejects.toThrow("renew deadline passed");
    expect(Date.now() - started).toBeLessThan(5_000);
    // A signal already aborted stops the request before it is sent.
    await expect(client.get(configMaps, "ns", "x", { signal: caller.signal })).rejects.toThrow("renew deadline passed");
  });
});

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}
