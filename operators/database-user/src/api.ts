// DatabaseUser: a MySQL account declared as a resource — the account, its
// password (from a Secret) and exactly its grants, on a MySQLInstance.
import {
  array,
  boolean,
  conditionsSchema,
  defineKind,
  integer,
  object,
  optional,
  string,
  stringEnum,
  type ObjectOf,
} from "@stateward/core";
import { MAX_HOST_LENGTH, MAX_IDENTIFIER_LENGTH, MAX_USER_LENGTH, objectNameField, secretKeyField } from "@stateward/mysql";
import { GLOBAL_ONLY_PRIVILEGES, NOT_TABLE_PRIVILEGES, PRIVILEGE_NAMES } from "./privileges.ts";

/** CEL list literal of strings (the privilege names are plain upper-case words). */
const celList = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(", ")}]`;

/**
 * A database or table name: no control characters, no backslash (it escapes
 * the wildcards of a database-level grant, so a name holding one could not be
 * granted exactly), not ending in a space (MySQL refuses that).
 */
const NAME_PATTERN = "^[^\\x00-\\x1f\\x7f\\\\]*[^\\x00-\\x1f\\x7f\\\\ ]$";

const grant = object(
  {
    privileges: array(stringEnum(PRIVILEGE_NAMES, "A privilege, as MySQL names it (e.g. SELECT, CREATE TEMPORARY TABLES, ALL PRIVILEGES)."), "The privileges granted on this database or table.", {
      minItems: 1,
      maxItems: 64,
      listType: "set",
    }),
    database: string(
      "The database the privileges apply to, or \"*\" for all databases (a global grant). Taken literally: \"_\" and \"%\" are not wildcards.",
      { minLength: 1, maxLength: MAX_IDENTIFIER_LENGTH, pattern: NAME_PATTERN },
    ),
    table: optional(
      string("A table of the database, or \"*\" for every table in it.", {
        minLength: 1,
        maxLength: MAX_IDENTIFIER_LENGTH,
        pattern: NAME_PATTERN,
        default: "*",
      }),
    ),
    withGrantOption: optional(boolean("Whether the account may grant these privileges to others (WITH GRANT OPTION).", { default: false })),
  },
  "Privileges on one database, one table, or globally.",
  {
    validations: [
      { rule: "self.database != '*' || self.table == '*'", message: "a global grant (database \"*\") applies to every table: table must be \"*\"", fieldPath: ".table" },
      {
        rule: "!('ALL PRIVILEGES' in self.privileges) || self.privileges.size() == 1",
        message: "ALL PRIVILEGES already includes every privilege: list it alone",
        fieldPath: ".privileges",
      },
      {
        rule: `self.database == '*' || self.privileges.all(p, !(p in ${celList(GLOBAL_ONLY_PRIVILEGES)}))`,
        message: `administrative privileges (${GLOBAL_ONLY_PRIVILEGES.join(", ")}) can only be granted globally, with database "*"`,
        fieldPath: ".privileges",
      },
      {
        rule: `self.table == '*' || self.privileges.all(p, !(p in ${celList(NOT_TABLE_PRIVILEGES)}))`,
        message: `${NOT_TABLE_PRIVILEGES.filter((p) => !GLOBAL_ONLY_PRIVILEGES.includes(p)).join(", ")} apply to a whole database: they cannot be granted on a single table`,
        fieldPath: ".privileges",
      },
    ],
  },
);

export const DatabaseUserKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "DatabaseUser",
  plural: "databaseusers",
  shortNames: ["dbu"],
  scope: "Namespaced",
  description:
    "A MySQL account on a MySQLInstance: created with the password from a Secret and exactly the grants listed, " +
    "rotated when the Secret changes, dropped when the DatabaseUser is deleted (unless deletionPolicy is Retain). " +
    "An account that already exists is only taken over with adoptExisting; admin and system accounts never.",
  spec: object(
    {
      instanceRef: object(
        { name: objectNameField("Name of the MySQLInstance in the same namespace.") },
        "The MySQLInstance (server) the account lives on. Cannot be changed.",
      ),
      user: optional(
        string("The MySQL user name; defaults to metadata.name. Taken literally (\"%\" and \"_\" are ordinary characters here). Cannot be changed.", {
          minLength: 1,
          maxLength: MAX_USER_LENGTH,
          pattern: "^[^\\x00-\\x1f\\x7f\\s](?:[^\\x00-\\x1f\\x7f]*[^\\x00-\\x1f\\x7f\\s])?$",
        }),
      ),
      host: optional(
        string("The host part of the account: where the user may connect from, in lower case. A pattern: \"%\" is any host, \"10.0.%\" a subnet. Cannot be changed.", {
          minLength: 1,
          maxLength: MAX_HOST_LENGTH,
          pattern: "^[a-z0-9._%:/-]+$",
          default: "%",
        }),
      ),
      passwordSecretRef: object(
        {
          name: objectNameField("Name of a Secret in the same namespace."),
          key: secretKeyField("Key of the Secret's data holding the password.", "password"),
        },
        "The Secret holding the account's password. When its value changes, the account's password is changed.",
      ),
      grants: optional(
        array(grant, "The account's privileges. The account gets exactly these: privileges granted by other means are revoked.", {
          maxItems: 100,
          listType: "map",
          listMapKeys: ["database", "table"],
          default: [],
        }),
      ),
      maxUserConnections: optional(
        integer("The most connections the account may hold at once (MAX_USER_CONNECTIONS); 0 means no limit.", {
          minimum: 0,
          maximum: 2147483647,
          default: 0,
        }),
      ),
      tlsRequirement: optional(
        stringEnum(["None", "SSL", "X509"], "What the account's connections must present: None, SSL (an encrypted connection) or X509 (encrypted, with a client certificate).", {
          default: "None",
        }),
      ),
      deletionPolicy: optional(
        stringEnum(
          ["Delete", "Retain"],
          "What deleting the DatabaseUser does to the account: Delete drops it — only if the operator created it or adopted it (adoptExisting) — Retain leaves it in place.",
          { default: "Delete" },
        ),
      ),
      adoptExisting: optional(
        boolean(
          "Take over the account if it already exists on the server: its password is set from the Secret, grants not listed are revoked, " +
            "and deleting the DatabaseUser drops it (deletionPolicy Delete). Without it an existing account is left untouched (Ready=False, AccountExists). " +
            "The instance's admin account, the server's system accounts (root, mysql, mariadb.sys, mysql.sys, mysql.session, mysql.infoschema) and a MySQLCluster's replication account are never taken over.",
          { default: false },
        ),
      ),
    },
    "The account as it should be.",
    {
      validations: [
        { rule: "self.instanceRef.name == oldSelf.instanceRef.name", message: "instanceRef is immutable: create another DatabaseUser for another instance", fieldPath: ".instanceRef.name" },
        {
          rule: "has(self.user) == has(oldSelf.user) && (!has(self.user) || self.user == oldSelf.user)",
          message: "user is immutable: create another DatabaseUser for another account",
          fieldPath: ".user",
        },
        { rule: "self.host == oldSelf.host", message: "host is immutable: create another DatabaseUser for another account", fieldPath: ".host" },
      ],
    },
  ),
  status: object(
    {
      observedGeneration: optional(integer("The metadata.generation the status was computed for.")),
      conditions: optional(conditionsSchema()),
      user: optional(string("The MySQL user name of the account.")),
      host: optional(string("The host part of the account.")),
      passwordSecretVersion: optional(string("resourceVersion of the password Secret when its password was last applied.")),
      passwordFingerprint: optional(
        string("A fingerprint of the password last applied, to notice a changed Secret without keeping the password: an HMAC-SHA-256 keyed with the operator's Secret stateward-fingerprint-key (hmac-sha256:<key id>:...), or a salted scrypt hash written by an older release (kept until the Secret next changes)."),
      ),
      instanceUID: optional(string("uid of the MySQLInstance the account was last converged on.")),
      instanceGeneration: optional(integer("metadata.generation of the MySQLInstance the account was last converged on.")),
      accountOrigin: optional(
        stringEnum(
          ["Created", "Adopted"],
          "How the operator came to manage the account: Created (it did not exist) or Adopted (it existed and adoptExisting was set, or an earlier release managed it). Unset: the operator has not touched the account, and deleting the DatabaseUser will not drop it — unless the object carries the annotation stateward.io/account-created-by with its own metadata.uid, which the operator writes right before CREATE USER: then the account counts as Created (the status saying so was not written yet).",
        ),
      ),
    },
    "The observed state of the account.",
  ),
  printerColumns: [
    { name: "User", type: "string", jsonPath: ".status.user" },
    { name: "Host", type: "string", jsonPath: ".spec.host" },
    { name: "Instance", type: "string", jsonPath: ".spec.instanceRef.name" },
    { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
    { name: "Reason", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].reason` },
  ],
  validations: [
    {
      rule: "has(self.spec.user) || self.metadata.name.size() <= 32",
      message: "metadata.name is longer than 32 characters, the longest MySQL user name: set spec.user",
      fieldPath: ".spec.user",
    },
  ],
});

export type DatabaseUser = ObjectOf<typeof DatabaseUserKind>;
export type DatabaseUserSpec = DatabaseUser["spec"];
export type Grant = NonNullable<DatabaseUserSpec["grants"]>[number];
