// The MySQLInstance controller belongs to every MySQL operator: a manager
// running only mysql-backup (or only mysql-cluster) still keeps a
// MySQLInstance's status, and a manager running several of them runs the
// controller once.
import { Manager, captureLogs, type CapturedLogs } from "@stateward/core";
import type { MySQLInstance } from "@stateward/mysql";
import { selectOperators } from "@stateward/cli";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { deleteNamespace, freshNamespace, kubeConfigFrom, testClient } from "../../support/kube.ts";
import { waitFor } from "../../support/wait.ts";
import { MYI, createInstance, readyOf } from "../database-user/support.ts";

const env = inject("environment");
const client = testClient(env.kubeconfig);

async function startManager(operators: string[], namespace: string): Promise<{ manager: Manager; logs: CapturedLogs }> {
  const logs = captureLogs();
  // What `stateward run --operators <operators>` loads.
  const manager = new Manager({ kubeConfig: kubeConfigFrom(env.kubeconfig), namespaces: [namespace], logger: logs.logger, gracefulShutdownMs: 5_000 }).load(
    ...(await selectOperators(operators)),
  );
  await manager.start();
  return { manager, logs };
}

const readyInstance = (namespace: string, name: string) =>
  waitFor(`MySQLInstance ${namespace}/${name} Ready`, async () => {
    const i = await client.get<MySQLInstance>(MYI, namespace, name);
    return readyOf(i)?.status === "True" ? i : undefined;
  });

describe.each([["mysql-backup"], ["mysql-cluster"]])("a manager running only %s", (operator) => {
  let ns: string;
  let manager: Manager | undefined;

  beforeAll(async () => {
    ns = await freshNamespace(client, `myi-${operator.replace("mysql-", "")}`);
    manager = (await startManager([operator], ns)).manager;
  });

  afterAll(async () => {
    await manager?.stop();
    await deleteNamespace(client, ns);
  });

  it("reports a MySQLInstance Ready, with its flavor and version", async () => {
    await createInstance(client, env.mysql, ns, "db");
    const i = await readyInstance(ns, "db");
    expect(readyOf(i)?.reason).toBe("Connected");
    expect(i.status).toMatchObject({ flavor: "MariaDB", serverVersion: expect.stringMatching(/^\d+\.\d+\.\d+$/) as unknown });
  });
});

describe("a manager running every MySQL operator", () => {
  let ns: string;
  let running: { manager: Manager; logs: CapturedLogs } | undefined;

  beforeAll(async () => {
    ns = await freshNamespace(client, "myi-all");
    running = await startManager(["database-user", "mysql-backup", "mysql-cluster"], ns);
  });

  afterAll(async () => {
    await running?.manager.stop();
    await deleteNamespace(client, ns);
  });

  it("runs the MySQLInstance controller once, and it keeps the instance's status", async () => {
    const started = running?.logs.lines().filter((l) => l.msg === "controller started" && l.controller === "mysqlinstance") ?? [];
    expect(started).toHaveLength(1);
    await createInstance(client, env.mysql, ns, "db");
    expect(readyOf(await readyInstance(ns, "db"))?.reason).toBe("Connected");
  });
});
