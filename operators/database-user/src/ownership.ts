// Which accounts a DatabaseUser may manage. The operator acts with the
// instance's admin rights, so a DatabaseUser naming an account that already
// exists could otherwise reset its password, revoke its grants and, on delete,
// drop it — the admin account, root, or a cluster's replication account
// included. Pure: the reconciler supplies what it read.
import { CLUSTER_REPLICATION_USER, SYSTEM_USERS, type MySQLInstance } from "@stateward/mysql";
import { type ParsedGrant } from "./show-grants.ts";
import type { Account } from "./account.ts";
import type { DatabaseUser } from "./api.ts";

/** How the DatabaseUser came to manage its account (status.accountOrigin). */
export type AccountOrigin = "Created" | "Adopted";

/** Whether the MySQLInstance is the one a MySQLCluster publishes for itself. */
export function isClusterInstance(instance: MySQLInstance): boolean {
  return (instance.metadata.ownerReferences ?? []).some((o) => o.controller === true && o.kind === "MySQLCluster");
}

/**
 * Why the account must never be managed by a DatabaseUser, or undefined when
 * it may be. By user name, on any host: `root`@`localhost` matters as much as
 * `root`@`%`, and the admin Secret names a user, not a host.
 */
export function protectedAccount(account: Account, instance: { adminUser: string | undefined; cluster: boolean }): string | undefined {
  if (instance.adminUser !== undefined && account.user === instance.adminUser) {
    return `'${account.user}' is the admin account of the MySQLInstance (the operators log in with it)`;
  }
  if (SYSTEM_USERS.includes(account.user)) return `'${account.user}' is a system account of the server`;
  if (instance.cluster && account.user === CLUSTER_REPLICATION_USER) {
    return `'${account.user}' is the replication account of the MySQLCluster (its replicas log in with it)`;
  }
  return undefined;
}

/**
 * Annotation recording that this DatabaseUser is about to create its account: its value is the
 * object's own metadata.uid, written with the finalizer in one request right before CREATE USER
 * (see the reconciler). Bound to the uid so that the annotation copied with a manifest
 * (`kubectl get -o yaml`) into another object claims nothing there.
 */
export const ACCOUNT_CREATED_BY = "stateward.io/account-created-by";

/** The annotations that record the intent to create the account, for the write before CREATE USER. */
export function creationClaim(user: Pick<DatabaseUser, "metadata">): Record<string, string> {
  return { [ACCOUNT_CREATED_BY]: user.metadata.uid ?? "" };
}

/**
 * The account's origin as far as this DatabaseUser knows it: status.accountOrigin;
 * or — for an object last converged by a release that did not record it — Adopted:
 * that release managed (and on delete dropped) whatever account it found, and
 * the object keeps the behaviour it was created with; or Created when the object
 * carries its own creation claim (ACCOUNT_CREATED_BY with its uid) but no status
 * says so yet: CREATE USER may have run before the final status write was lost.
 */
export function knownOrigin(user: { status?: DatabaseUser["status"]; metadata?: Pick<DatabaseUser["metadata"], "uid" | "annotations"> }): AccountOrigin | undefined {
  const status = user.status;
  if (status?.accountOrigin !== undefined) return status.accountOrigin;
  if (status?.user !== undefined && status.passwordFingerprint !== undefined) return "Adopted";
  const uid = user.metadata?.uid;
  if (uid !== undefined && uid !== "" && user.metadata?.annotations?.[ACCOUNT_CREATED_BY] === uid) return "Created";
  return undefined;
}

/** Global privileges that make an account an administrator, as SHOW GRANTS lists them; empty when none. */
export function adminPrivileges(grants: readonly ParsedGrant[]): string[] {
  const out = new Set<string>();
  for (const g of grants) {
    if (g.kind !== "object" || g.database !== "*" || g.table !== "*") continue;
    for (const p of g.privileges) if (p === "ALL PRIVILEGES" || p === "SUPER") out.add(p);
    if (g.grantOption) out.add("GRANT OPTION");
  }
  return [...out];
}
