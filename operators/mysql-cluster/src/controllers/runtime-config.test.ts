// The decisions decideConfig takes before it talks to any server.
import { captureLogs, type EventRecorder, type KubeObject } from "@stateward/core";
import { describe, expect, it } from "vitest";
import type { MySQLCluster } from "../api.ts";
import { renderMyCnf } from "../config/my-cnf.ts";
import { MY_CNF_KEY } from "../resources/objects.ts";
import { POD_CONFIG_HASH_ANNOTATION, RUNTIME_SETTINGS_ANNOTATION, decideConfig } from "./runtime-config.ts";

const cluster = { apiVersion: "stateward.io/v1alpha1", kind: "MySQLCluster", metadata: { name: "c", namespace: "ns" }, spec: { storage: { size: "1Gi" } } } as MySQLCluster;
const events: EventRecorder = { record: () => Promise.reject(new Error("no event expected")) } as unknown as EventRecorder;
const ctx = { log: captureLogs().logger, signal: new AbortController().signal, reconcileID: "t" };
const noServers = () => Promise.reject(new Error("no server should be asked"));
const live = (cnf: string, hash = "live-hash", runtime = "{}") =>
  ({ metadata: { name: "c-config", annotations: { [POD_CONFIG_HASH_ANNOTATION]: hash, [RUNTIME_SETTINGS_ANNOTATION]: runtime } }, data: { [MY_CNF_KEY]: cnf } }) as KubeObject & { data: Record<string, string> };
const desired = (config: Record<string, string>) => ({ cnf: renderMyCnf("MariaDB", config), hash: "new-hash" });

describe("decideConfig, before any server", () => {
  it("takes the new hash for a ConfigMap it never annotated (a new cluster, or one from an older operator)", async () => {
    const unannotated = { metadata: { name: "c-config" }, data: { [MY_CNF_KEY]: renderMyCnf("MariaDB") } };
    expect(await decideConfig({ events }, cluster, "MariaDB", desired({}), undefined, noServers, ctx)).toEqual({ podHash: "new-hash", runtime: {} });
    expect(await decideConfig({ events }, cluster, "MariaDB", desired({}), unannotated, noServers, ctx)).toEqual({ podHash: "new-hash", runtime: {} });
  });

  it("keeps the hash and the runtime settings when nothing changed, or only the text around the settings", async () => {
    const cnf = renderMyCnf("MariaDB", { max_connections: "400" });
    expect(await decideConfig({ events }, cluster, "MariaDB", desired({ max_connections: "400" }), live(cnf), noServers, ctx)).toEqual({ podHash: "live-hash", runtime: {} });
    const older = cnf.replace(/^# .*$/m, "# an older header");
    expect(await decideConfig({ events }, cluster, "MariaDB", desired({ max_connections: "400" }), live(older, "h", '{"max_connections":"400"}'), noServers, ctx)).toEqual({
      podHash: "h",
      runtime: { max_connections: "400" },
    });
  });

  it("needs a restart for a removed setting, a value SET GLOBAL cannot take, or a MySQL server", async () => {
    const restart = { podHash: "new-hash", runtime: {} };
    const withLog = live(renderMyCnf("MariaDB", { max_connections: "400", back_log: "90" }));
    expect(await decideConfig({ events }, cluster, "MariaDB", desired({ max_connections: "400" }), withLog, noServers, ctx)).toEqual(restart);
    const before = live(renderMyCnf("MariaDB"));
    expect(await decideConfig({ events }, cluster, "MariaDB", desired({ init_connect: "'SET NAMES utf8mb4'" }), before, noServers, ctx)).toEqual(restart);
    const mysql = live(renderMyCnf("MySQL"));
    expect(await decideConfig({ events }, cluster, "MySQL", { cnf: renderMyCnf("MySQL", { max_connections: "400" }), hash: "new-hash" }, mysql, noServers, ctx)).toEqual(restart);
  });

  it("needs a restart when a server does not answer", async () => {
    const result = await decideConfig({ events }, cluster, "MariaDB", desired({ max_connections: "400" }), live(renderMyCnf("MariaDB")), () => Promise.resolve(undefined), ctx);
    expect(result).toEqual({ podHash: "new-hash", runtime: {} });
  });
});
