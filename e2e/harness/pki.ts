// The certificates of a throw-away cluster: a CA, the apiserver's serving
// certificate, the admin client certificate (O=system:masters, as envtest
// does) and the service-account signing key. Made with the openssl CLI, with
// arguments passed as an argv array (never through a shell).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { EnvironmentError } from "./process.ts";

const run = promisify(execFile);

export interface ClusterPki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  /** The apiserver's identity towards kubelets (logs, exec, port-forward): O=system:masters. */
  kubeletClientCert: string;
  kubeletClientKey: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await run("openssl", args, { cwd });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new EnvironmentError(`openssl ${args[0]} failed while making test certificates: ${stderr}`);
  }
}

async function keyPair(dir: string, name: string): Promise<void> {
  await openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`], dir);
}

async function signedCert(dir: string, name: string, subject: string, extensions: string): Promise<void> {
  await keyPair(dir, name);
  await openssl(["req", "-new", "-key", `${name}.key`, "-subj", subject, "-out", `${name}.csr`], dir);
  writeFileSync(join(dir, `${name}.ext`), `[v3]\n${extensions}\n`);
  await openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
      "-days", "3650", "-out", `${name}.crt`, "-extfile", `${name}.ext`, "-extensions", "v3"],
    dir,
  );
}

/** Creates the PKI in `dir` unless it is already there (dev-up reuses it). */
export async function ensurePki(dir: string): Promise<ClusterPki> {
  const pki: ClusterPki = {
    dir,
    caCert: join(dir, "ca.crt"),
    caKey: join(dir, "ca.key"),
    serverCert: join(dir, "apiserver.crt"),
    serverKey: join(dir, "apiserver.key"),
    adminCert: join(dir, "admin.crt"),
    adminKey: join(dir, "admin.key"),
    serviceAccountKey: join(dir, "service-account.key"),
    serviceAccountPub: join(dir, "service-account.pub"),
    kubeletClientCert: join(dir, "apiserver-kubelet-client.crt"),
    kubeletClientKey: join(dir, "apiserver-kubelet-client.key"),
  };
  if (existsSync(pki.serviceAccountPub) && existsSync(pki.kubeletClientCert)) return pki;
  mkdirSync(dir, { recursive: true });
  await keyPair(dir, "ca");
  await openssl(
    ["req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=stateward-test-ca", "-days", "3650",
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
      "-out", "ca.crt"],
    dir,
  );
  await signedCert(
    dir, "apiserver", "/CN=kube-apiserver",
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n" +
      "subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc," +
      "DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1",
  );
  await signedCert(
    dir, "admin", "/O=system:masters/CN=stateward-admin",
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth",
  );
  await clientCertificate(dir, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client");
  await keyPair(dir, "service-account");
  await openssl(["pkey", "-in", "service-account.key", "-pubout", "-out", "service-account.pub"], dir);
  return pki;
}

/**
 * A client certificate signed by the cluster CA in `dir` (written as
 * `<name>.crt` / `<name>.key` there), e.g. a kubelet's
 * "/O=system:nodes/CN=system:node:<node>".
 */
export async function clientCertificate(dir: string, name: string, subject: string): Promise<{ cert: string; key: string }> {
  await signedCert(dir, name, subject, "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth");
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

export function readPem(path: string): string {
  return readFileSync(path, "utf8");
}
