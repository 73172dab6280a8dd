// examples/database-user applies cleanly with kubectl and converges: the
// account logs in with the example's password. (The user name is made
// unique for the run, since other suites share the MariaDB server.)
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot, tools } from "../../harness/index.ts";
import { freshNamespace, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { MYI, adminConnection, cleanUp, leftovers, readyOf, showGrants, startManager, suffix, tryLogin, waitReady } from "./support.ts";
import type { MySQLInstance } from "@stateward/mysql";

const env = inject("environment");
const client = testClient(env.kubeconfig);
const dir = join(repoRoot, "examples", "database-user");

describe("examples/database-user", () => {
  const left = leftovers();
  const user = `shop_${suffix()}`;
  let ns: string;

  beforeAll(async () => {
    ns = await freshNamespace(client, "dbu-examples");
    left.namespaces.push(ns);
    left.accounts.push({ user, host: "%" });
    left.managers.push(await startManager(env.kubeconfig, { namespaces: [ns] }));
  });

  afterAll(async () => {
    await cleanUp(client, env.mysql, left);
  });

  it("applies with kubectl and becomes Ready", async () => {
    const docs = readdirSync(dir)
      .filter((f) => f.endsWith(".yaml"))
      .sort()
      .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), "utf8")).map((d) => d.toJS() as { kind: string; spec?: Record<string, unknown> }));
    expect(docs.map((d) => d.kind)).toEqual(["Secret", "MySQLInstance", "Secret", "DatabaseUser"]);
    const dbu = docs.find((d) => d.kind === "DatabaseUser")!;
    dbu.spec = { ...dbu.spec, user };
    const manifest = docs.map((d) => stringify(d)).join("---\n");

    const child = execFile(tools.kubectl(), ["--kubeconfig", env.kubeconfig, "-n", ns, "apply", "-f", "-"]);
    const out = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      let stdout = "";
      let stderr = "";
      child.stdout?.on("data", (d: string) => (stdout += d));
      child.stderr?.on("data", (d: string) => (stderr += d));
      child.on("exit", (code) => resolve({ code, stdout, stderr }));
      child.stdin?.end(manifest);
    });
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("databaseuser.stateward.io/shop created");

    await waitFor("demo-db Ready", async () => {
      const i = await client.get<MySQLInstance>(MYI, ns, "demo-db");
      return readyOf(i)?.status === "True" ? i : undefined;
    });
    await waitReady(client, ns, "shop", 1);
    expect(await tryLogin(env.mysql, user, "change-me-4f8a2c")).toBe("ok");
    const admin = await adminConnection(env.mysql);
    try {
      expect(await showGrants(admin, user)).toEqual([
        `GRANT SELECT, INSERT, UPDATE, DELETE ON \`shop\`.* TO \`${user}\`@\`%\``,
        `GRANT SELECT ON \`shop\\_reporting\`.* TO \`${user}\`@\`%\``,
      ]);
    } finally {
      await admin.end();
    }
  });
});
