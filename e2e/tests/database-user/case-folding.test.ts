// A server that keeps database and table names in lower case
// (lower_case_table_names=1, as on Windows and macOS and as many managed
// services are configured): a grant on `Shop` shows as `shop` in SHOW GRANTS.
// Compared as written, the grant never converged: granted, then revoked as
// extra, at every pass (GrantsNotConverged), the privilege left revoked.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtin } from "@stateward/core";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startMariaDB, stopMariaDB, type MariaDBEndpoint } from "../../harness/index.ts";
import { freshNamespace, testClient } from "../../support/kube.ts";
import { DBU, MYI, cleanUp, databaseUser, instance, leftovers, q, secret, startManager, suffix, waitReady } from "./support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);

describe("a server that folds names to lower case (lower_case_table_names=1)", () => {
  const left = leftovers();
  const dir = mkdtempSync(join(tmpdir(), "stateward-lctn-"));
  let server: MariaDBEndpoint;
  let ns: string;
  const user = `folded_${suffix()}`;
  const password = `pw-${suffix()}`;

  beforeAll(async () => {
    server = await startMariaDB({ dir, args: ["--lower-case-table-names=1"] });
    const admin = await mysql.createConnection({ host: server.host, port: server.port, user: server.user, password: server.password });
    try {
      await admin.query("CREATE DATABASE Shop");
      await admin.query("CREATE TABLE Shop.Orders (id INT PRIMARY KEY)");
      await admin.query("INSERT INTO Shop.Orders VALUES (1), (2)");
    } finally {
      await admin.end();
    }
    ns = await freshNamespace(client, "dbu-lctn");
    left.namespaces.push(ns);
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns] }));
    await client.create(builtin.secret, secret(ns, "admin", { username: server.user, password: server.password }));
    await client.create(MYI, instance(ns, "folding", { host: server.host, port: server.port, adminSecret: "admin" }));
    await client.create(builtin.secret, secret(ns, "pw", { password }));
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
    if (server) await stopMariaDB(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it("grants on `Shop` and `Shop`.`Orders` converge: Ready, and the account reads and writes what was granted", async () => {
    await client.create(
      DBU,
      databaseUser(ns, "folded", {
        instanceRef: { name: "folding" },
        user,
        passwordSecretRef: { name: "pw" },
        grants: [
          { privileges: ["SELECT"], database: "Shop" },
          { privileges: ["INSERT"], database: "Shop", table: "Orders" },
        ],
      }),
    );
    await waitReady(client, ns, "folded", 1);
    const conn = await mysql.createConnection({ host: server.host, port: server.port, user, password });
    try {
      const [rows] = await conn.query(`SELECT COUNT(*) AS n FROM ${q("Shop")}.${q("Orders")}`);
      expect((rows as { n: number }[])[0]?.n).toBe(2);
      await conn.query(`INSERT INTO ${q("Shop")}.${q("Orders")} VALUES (3)`);
    } finally {
      await conn.end();
    }
  });
});
