// MySQLInstance: a MySQL or MariaDB server the operators may act on. It lives
// here, not in the database-user operator, because every MySQL operator reads
// it (DatabaseUser and MySQLBackup point at one; MySQLCluster publishes one).
import { conditionsSchema, defineKind, integer, object, optional, string, stringEnum, type ObjectOf } from "@stateward/core";
import { FLAVORS } from "./flavor.ts";

/** What a Kubernetes object name looks like (RFC 1123 subdomain). */
export const OBJECT_NAME_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/** What a key of a Secret's data looks like. */
export const SECRET_KEY_PATTERN = "^[-._a-zA-Z0-9]+$";

export const TLS_MODES = ["disabled", "preferred", "required", "verify-ca", "verify-identity"] as const;
export type TlsMode = (typeof TLS_MODES)[number];

/** A reference to an object in the same namespace, by name. */
export function objectNameField(description: string) {
  return string(description, { minLength: 1, maxLength: 253, pattern: OBJECT_NAME_PATTERN });
}

/** A key of a Secret, with a default. */
export function secretKeyField(description: string, defaultKey: string) {
  return optional(string(description, { minLength: 1, maxLength: 253, pattern: SECRET_KEY_PATTERN, default: defaultKey }));
}

export const MySQLInstanceKind = defineKind({
  group: "stateward.io",
  version: "v1alpha1",
  kind: "MySQLInstance",
  plural: "mysqlinstances",
  shortNames: ["myi"],
  scope: "Namespaced",
  description:
    "A MySQL or MariaDB server the Stateward operators may act on: where it is and which admin credentials to use. " +
    "DatabaseUser and MySQLBackup objects in the same namespace refer to it by name, so nobody else needs the admin password.",
  spec: object(
    {
      host: string("Host name or IP address of the server, e.g. mysql.db.svc.cluster.local.", {
        minLength: 1,
        maxLength: 253,
        pattern: "^[A-Za-z0-9:]([A-Za-z0-9._:-]*[A-Za-z0-9])?$",
      }),
      port: optional(integer("TCP port of the server.", { minimum: 1, maximum: 65535, default: 3306 })),
      adminSecretRef: object(
        {
          name: objectNameField("Name of a Secret in the same namespace holding the admin account's credentials."),
          usernameKey: secretKeyField("Key of the Secret's data holding the admin user name.", "username"),
          passwordKey: secretKeyField("Key of the Secret's data holding the admin password (may be empty, but must be present).", "password"),
        },
        "The admin account the operators connect as. It needs CREATE USER, SELECT on the mysql schema, and every privilege it is asked to grant, WITH GRANT OPTION.",
      ),
      tls: optional(
        object(
          {
            mode: optional(
              stringEnum(TLS_MODES, "How to use TLS: disabled (plain TCP); preferred (TLS when the server offers it, unverified); required (TLS, unverified); verify-ca (TLS, the server certificate must chain to the CA); verify-identity (verify-ca, and the certificate must name the host).", {
                default: "preferred",
              }),
            ),
            caSecretRef: optional(
              object(
                {
                  name: objectNameField("Name of a Secret in the same namespace holding the CA certificate."),
                  key: secretKeyField("Key of the Secret's data holding the PEM-encoded CA certificate(s).", "ca.crt"),
                },
                "The CA that signed the server's certificate, for verify-ca and verify-identity. Without it the system's trusted CAs are used.",
              ),
            ),
          },
          "TLS settings for connections to the server.",
          {
            default: {},
            validations: [
              {
                rule: "!has(self.caSecretRef) || self.mode in ['verify-ca', 'verify-identity']",
                message: "caSecretRef is only used with mode verify-ca or verify-identity",
                fieldPath: ".caSecretRef",
              },
            ],
          },
        ),
      ),
    },
    "Where the server is and how to log in to it.",
  ),
  status: object(
    {
      observedGeneration: optional(integer("The metadata.generation the status was computed for.")),
      conditions: optional(conditionsSchema()),
      serverVersion: optional(string("The server's version (major.minor.patch), as last seen.")),
      flavor: optional(stringEnum(FLAVORS, "MySQL or MariaDB, as detected from the server's version.")),
    },
    "The observed state of the server.",
  ),
  printerColumns: [
    { name: "Host", type: "string", jsonPath: ".spec.host" },
    { name: "Port", type: "integer", jsonPath: ".spec.port" },
    { name: "Flavor", type: "string", jsonPath: ".status.flavor" },
    { name: "Version", type: "string", jsonPath: ".status.serverVersion" },
    { name: "Ready", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].status` },
    { name: "Reason", type: "string", jsonPath: `.status.conditions[?(@.type=="Ready")].reason`, priority: 1 },
  ],
});

export type MySQLInstance = ObjectOf<typeof MySQLInstanceKind>;
export type MySQLInstanceSpec = MySQLInstance["spec"];

/** The Secrets an instance reads: its admin Secret and, with TLS verification, its CA Secret. */
export function instanceSecrets(instance: MySQLInstance): string[] {
  const ns = instance.metadata.namespace ?? "";
  const out = [`${ns}/${instance.spec.adminSecretRef.name}`];
  const ca = instance.spec.tls?.caSecretRef;
  if (ca) out.push(`${ns}/${ca.name}`);
  return out;
}
