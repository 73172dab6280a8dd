// Cache indexes that map a changed object to the objects that refer to it:
// a Secret to the DatabaseUsers using it, a MySQLInstance
// to its DatabaseUsers, an account to the DatabaseUsers claiming it.
import type { KubeObject, Request } from "@stateward/core";
import type { DatabaseUser } from "./api.ts";

export const USER_BY_SECRET = "databaseuser.secret";
export const USER_BY_INSTANCE = "databaseuser.instance";
export const USER_BY_ACCOUNT = "databaseuser.account";

const key = (namespace: string | undefined, name: string) => `${namespace ?? ""}/${name}`;

/** The index value of any object: `<namespace>/<name>`. */
export function objectIndexKey(obj: KubeObject): string {
  return key(obj.metadata.namespace, obj.metadata.name ?? "");
}

export function userSecret(user: DatabaseUser): string[] {
  return [key(user.metadata.namespace, user.spec.passwordSecretRef.name)];
}

export function userInstance(user: DatabaseUser): string[] {
  return [key(user.metadata.namespace, user.spec.instanceRef.name)];
}

/** The MySQL user name of a DatabaseUser: spec.user, defaulting to metadata.name. */
export function mysqlUserName(user: DatabaseUser): string {
  return user.spec.user ?? user.metadata.name ?? "";
}

/** One value per account on one instance: two DatabaseUsers with the same value fight over one account. */
export function userAccount(user: DatabaseUser): string[] {
  return [JSON.stringify([user.metadata.namespace ?? "", user.spec.instanceRef.name, mysqlUserName(user), user.spec.host ?? "%"])];
}

export function toRequest(obj: KubeObject): Request {
  return { namespace: obj.metadata.namespace, name: obj.metadata.name ?? "" };
}
