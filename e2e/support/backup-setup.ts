// What a backup needs in a test namespace: a MySQLInstance "db" for the
// environment's MariaDB (or another server of the test's, with its admin
// Secret) and an S3 credentials Secret "s3-creds" for the environment's bucket;
// and waiting for a backup or a restore to finish.
import { builtin, type KubeClient, type KubeObject } from "@stateward/core";
import { MySQLInstanceKind } from "@stateward/mysql";
import { MySQLBackupKind, MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "@stateward/operator-mysql-backup";
import type { EnvironmentInfo, MariaDBEndpoint } from "../harness/index.ts";
import { waitFor } from "./wait.ts";

export async function createBackupPrerequisites(
  client: KubeClient,
  ns: string,
  env: EnvironmentInfo,
  root: Pick<MariaDBEndpoint, "host" | "port" | "user" | "password"> = env.mysql,
): Promise<void> {
  await createS3Secret(client, ns, env);
  await createMySQLInstance(client, ns, "db", root);
}

/** A MySQLInstance `name` for a server of the test's, with its admin Secret `<name>-admin`. */
export async function createMySQLInstance(client: KubeClient, ns: string, name: string, root: Pick<MariaDBEndpoint, "host" | "port" | "user" | "password">): Promise<void> {
  const secret = name === "db" ? "mysql-admin" : `${name}-admin`;
  await client.create(builtin.secret, { metadata: { name: secret, namespace: ns }, stringData: { username: root.user, password: root.password } } as KubeObject);
  await client.create(MySQLInstanceKind.resource, {
    apiVersion: MySQLInstanceKind.apiVersion, kind: MySQLInstanceKind.kind, metadata: { name, namespace: ns },
    spec: { host: root.host, port: root.port, adminSecretRef: { name: secret } },
  } as KubeObject);
}

/** A Secret `name` with the environment's S3 credentials, under the keys a storage block reads by default. */
export async function createS3Secret(client: KubeClient, ns: string, env: EnvironmentInfo, name = "s3-creds"): Promise<void> {
  await client.create(builtin.secret, {
    metadata: { name, namespace: ns },
    stringData: { AWS_ACCESS_KEY_ID: env.s3.accessKeyId, AWS_SECRET_ACCESS_KEY: env.s3.secretAccessKey },
  } as KubeObject);
}

/** Waits for MySQLBackup `name` to be Completed; throws at once if it Failed. */
export async function backupCompleted(client: KubeClient, ns: string, name: string, timeoutMs = 120_000): Promise<MySQLBackup> {
  return waitFor(`MySQLBackup ${name} Completed`, async () => {
    const b = await client.get<MySQLBackup>(MySQLBackupKind.resource, ns, name);
    if (b.status?.phase === "Failed") throw new Error(`backup ${name} failed: ${JSON.stringify(b.status.conditions)}`);
    return b.status?.phase === "Completed" ? b : undefined;
  }, timeoutMs, 250);
}

/** Waits for MySQLRestore `name` to be Completed or Failed. */
export async function restoreFinished(client: KubeClient, ns: string, name: string, timeoutMs = 180_000): Promise<MySQLRestore> {
  return waitFor(`MySQLRestore ${name} finished`, async () => {
    const r = await client.get<MySQLRestore>(MySQLRestoreKind.resource, ns, name);
    return r.status?.phase === "Completed" || r.status?.phase === "Failed" ? r : undefined;
  }, timeoutMs, 250);
}
