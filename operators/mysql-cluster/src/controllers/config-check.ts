// Step 2 of a reconcile: spec.config checked against the running primary's
// variables before anything is applied. A name the server does not know is a
// problem for the user (Failed, InvalidConfig); the check runs once per change.
import type { InstanceConnection } from "@stateward/mysql";
import type { MySQLCluster } from "../api.ts";
import { unknownSettings } from "../config/my-cnf.ts";
import { serverVariables } from "../replication/server.ts";
import { ClusterProblem } from "./problems.ts";

export class ConfigCheck {
  /** Config already checked against the server, per cluster uid. */
  private readonly checked = new Map<string, string>();

  async check(cluster: MySQLCluster, primary: InstanceConnection): Promise<void> {
    const config = cluster.spec.config ?? {};
    const key = JSON.stringify(config);
    const uid = cluster.metadata.uid ?? "";
    if (this.checked.get(uid) === key) return;
    if (Object.keys(config).length > 0) {
      const unknown = unknownSettings(config, await serverVariables(primary));
      if (unknown.length > 0) {
        throw new ClusterProblem(
          "Failed",
          "InvalidConfig",
          `config holds settings the server (${primary.server.flavor} ${primary.server.version}) does not know: ${unknown.join(", ")}; nothing was applied. Fix or remove them (or prefix with loose- to pass them anyway)`,
        );
      }
    }
    this.checked.set(uid, key);
  }
}
