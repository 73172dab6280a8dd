// TLS to the server, mode by mode, against a MariaDB of our own with a
// certificate from a throw-away CA (the environment's server has no TLS):
// verify-identity and verify-ca with a custom CA from a Secret, a wrong CA
// refused, `required` refused by a server without TLS, `preferred` falling
// back to plain TCP only there — and an account that requires SSL.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { builtin } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startMariaDB, stopMariaDB, type MariaDBEndpoint } from "../../harness/index.ts";
import { freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { DBU, MYI, cleanUp, databaseUser, instance, leftovers, readyOf, secret, startManager, suffix, tryLogin, waitReady } from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const run = promisify(execFile);

/** A CA and a server certificate for localhost / 127.0.0.1, made with the openssl CLI (argv, no shell). */
async function makeCa(dir: string, name: string): Promise<void> {
  await run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`], { cwd: dir });
  await run("openssl", ["req", "-x509", "-new", "-key", `${name}.key`, "-subj", `/CN=${name}`, "-days", "1",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", `${name}.crt`], { cwd: dir });
}

async function makeServerCert(dir: string, ca: string): Promise<void> {
  await run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "server.key"], { cwd: dir });
  await run("openssl", ["req", "-new", "-key", "server.key", "-subj", "/CN=localhost", "-out", "server.csr"], { cwd: dir });
  writeFileSync(join(dir, "server.ext"), "[v3]\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n");
  await run("openssl", ["x509", "-req", "-in", "server.csr", "-CA", `${ca}.crt`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "1",
    "-out", "server.crt", "-extfile", "server.ext", "-extensions", "v3"], { cwd: dir });
}

type Tls = NonNullable<MySQLInstance["spec"]["tls"]>;

describe("TLS to the server", () => {
  const id = suffix();
  const left = leftovers();
  const certs = mkdtempSync(join(tmpdir(), "stateward-tls-"));
  let server: MariaDBEndpoint;
  let ns: string;

  beforeAll(async () => {
    await makeCa(certs, "ca");
    await makeCa(certs, "otherca");
    await makeServerCert(certs, "ca");
    server = await startMariaDB({
      dir: join(certs, "mariadb"),
      args: [`--ssl-ca=${join(certs, "ca.crt")}`, `--ssl-cert=${join(certs, "server.crt")}`, `--ssl-key=${join(certs, "server.key")}`],
    });
    ns = await freshNamespace(client, "dbu-tls");
    left.namespaces.push(ns);
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns] }));
    await client.create(builtin.secret, secret(ns, "admin", { username: server.user, password: server.password }));
    await client.create(builtin.secret, secret(ns, "env-admin", { username: env.mysql.user, password: env.mysql.password }));
    await client.create(builtin.secret, secret(ns, "ca", { "ca.crt": readFileSync(join(certs, "ca.crt"), "utf8") }));
    await client.create(builtin.secret, secret(ns, "other-ca", { "ca.crt": readFileSync(join(certs, "otherca.crt"), "utf8") }));
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
    if (server) await stopMariaDB(server);
    rmSync(certs, { recursive: true, force: true });
  });

  const withTls = async (name: string, host: string, port: number, adminSecret: string, tls: Tls) => {
    await client.create(MYI, instance(ns, name, { host, port, adminSecret, tls }));
    // A Secret created moments ago may not be in the manager's cache yet: that first answer does not count.
    return waitFor(`${name} reconciled`, async () => {
      const i = await client.get<MySQLInstance>(MYI, ns, name);
      const reason = readyOf(i)?.reason;
      return reason !== undefined && reason !== "SecretNotFound" ? i : undefined;
    });
  };

  it("verify-identity with the CA from a Secret: connected over TLS", async () => {
    const i = await withTls("verified", "localhost", server.port, "admin", { mode: "verify-identity", caSecretRef: { name: "ca" } });
    expect(readyOf(i)).toMatchObject({ status: "True", reason: "Connected" });
    expect(readyOf(i)?.message).toMatch(/over TLS$/);
  });

  it("verify-ca accepts the server by its CA alone (an IP address, not the name)", async () => {
    const i = await withTls("byca", "127.0.0.1", server.port, "admin", { mode: "verify-ca", caSecretRef: { name: "ca" } });
    expect(readyOf(i)).toMatchObject({ status: "True" });
  });

  it("refuses a server whose certificate another CA signed", async () => {
    const i = await withTls("wrongca", "localhost", server.port, "admin", { mode: "verify-ca", caSecretRef: { name: "other-ca" } });
    expect(readyOf(i)).toMatchObject({ status: "False", reason: "TLSFailed" });
    expect(readyOf(i)?.message).toMatch(/^TLS to MySQLInstance wrongca failed: /);
  });

  it("required refuses a server without TLS; preferred falls back to plain TCP there, and uses TLS where offered", async () => {
    const required = await withTls("required", env.mysql.host, env.mysql.port, "env-admin", { mode: "required" });
    expect(readyOf(required)).toMatchObject({ status: "False", reason: "TLSFailed" });
    expect(readyOf(required)?.message).toMatch(/does not support secure connection/);
    const plain = await withTls("preferred-plain", env.mysql.host, env.mysql.port, "env-admin", { mode: "preferred" });
    expect(readyOf(plain)?.message).toMatch(/without TLS$/);
    const tls = await withTls("preferred-tls", "127.0.0.1", server.port, "admin", { mode: "preferred" });
    expect(readyOf(tls)?.message).toMatch(/over TLS$/);
  });

  it("an account with tlsRequirement SSL logs in over TLS only", async () => {
    const user = `tls_${id}`;
    await client.create(builtin.secret, secret(ns, "tls-user", { password: "tls-pw" }));
    await client.create(DBU, databaseUser(ns, "tlsuser", { instanceRef: { name: "verified" }, user, passwordSecretRef: { name: "tls-user" }, tlsRequirement: "SSL" }));
    await waitReady(client, ns, "tlsuser", 1);
    expect(await tryLogin(server, user, "tls-pw")).toBe("ER_ACCESS_DENIED_ERROR");
    const conn = await mysql.createConnection({
      host: "127.0.0.1",
      port: server.port,
      user,
      password: "tls-pw",
      ssl: { ca: readFileSync(join(certs, "ca.crt"), "utf8") },
    });
    const [rows] = await conn.query("SHOW SESSION STATUS LIKE 'Ssl_version'");
    expect((rows as { Value: string }[])[0]?.Value).toMatch(/^TLS/);
    await conn.end();
  });
});
