// KubeClient against a local HTTPS server that asks for a client certificate,
// as kube-apiserver does: every request must be authenticated, and requests
// must share connections instead of paying a TCP + TLS handshake (with a
// client certificate) each — on both ends (docs/performance.md).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
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
const seen: { authorization?: string; clientCert: boolean }[] = [];

beforeAll(async () => {
  openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=test-ca"]);
  for (const [name, ext] of [["server", "subjectAltName=IP:127.0.0.1"], ["client", "extendedKeyUsage=clientAuth"]] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`]);
    openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${name}.crt`, "-days", "1", "-extfile", `${name}.ext`]);
  }
  server = createServer({ key: pem("server.key"), cert: pem("server.crt"), ca: pem("ca.crt"), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    seen.push({ authorization: req.headers.authorization, clientCert: "authorized" in req.socket && req.socket.authorized === true });
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", namespace: "ns" } }));
  });
  server.on("secureConnection", () => connections++);
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

function kubeConfig(user: Record<string, string>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: url, caData: b64("ca.crt"), skipTLSVerify: false }],
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
