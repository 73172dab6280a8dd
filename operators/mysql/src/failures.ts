// Why a reconcile failed, in the words a condition and an event carry: a
// CamelCase reason, a message naming the cause (the Secret, the key, the
// instance — never a value), and whether retrying can help: core's
// ReconcileError, with the reasons the MySQL operators give.
import { ReconcileError, messageOf } from "@stateward/core";
import { MySQLError } from "./errors.ts";
import { InvalidIdentifierError } from "./identifiers.ts";
import { MissingSecretError } from "./secrets.ts";

export class Failure extends ReconcileError {
  override name = "Failure";

  /** `terminal`: retrying cannot help until the object changes. */
  constructor(reason: string, message: string, terminal = false) {
    super(reason, message, { terminal });
  }
}

/**
 * A Failure for any error thrown while working on `instanceName`. `prefix`
 * distinguishes the two kinds' reasons: a DatabaseUser says
 * "InstanceUnreachable" where the MySQLInstance itself says "Unreachable".
 */
export function toFailure(err: unknown, instanceName: string, prefix: "Instance" | "" = "Instance"): Failure {
  if (err instanceof Failure) return err;
  if (err instanceof MissingSecretError) return new Failure(err.reason, err.message);
  if (err instanceof InvalidIdentifierError) return new Failure("InvalidSpec", err.message, true);
  if (err instanceof MySQLError) {
    const instance = `MySQLInstance ${instanceName}`;
    switch (err.failure) {
      case "Unreachable":
      case "ConnectionLost":
        return new Failure(`${prefix}Unreachable`, `${instance} is unreachable: ${err.message}`);
      case "AuthenticationFailed":
        return new Failure(`${prefix}AuthenticationFailed`, `${instance} refused the admin credentials: ${err.message}`);
      case "TLSFailed":
        return new Failure(`${prefix}TLSFailed`, `TLS to ${instance} failed: ${err.message}`);
      case "InsufficientPrivileges":
        return new Failure("InsufficientPrivileges", `the admin account of ${instance} lacks a privilege: ${err.message}`);
      case "NoSuchTable":
        return new Failure("TableNotFound", err.message);
      case "InvalidStatement":
        return new Failure("InvalidSpec", `${instance} refused the statement: ${err.message}`, true);
      case "PasswordRejected":
        return new Failure("PasswordRejected", `${instance} refused the password: ${err.message}`);
      case "NoSuchDatabase":
      case "LockTimeout":
      case "SchemaChanged":
      case "ServerError":
        return new Failure("SQLError", `${instance}: ${err.message}${err.code ? ` (${err.code})` : ""}`);
    }
  }
  return new Failure("ReconcileError", messageOf(err));
}
