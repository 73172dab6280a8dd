// `kubectl port-forward` for suites that run against a real cluster (make
// e2e-kind): a Service inside it reached from the test on a free loopback port.
import { spawn } from "node:child_process";
import { tools } from "../harness/index.ts";

export interface PortForward {
  port: number;
  stop(): void;
}

/** Forwards 127.0.0.1:<free port> to `target` (e.g. "svc/db") port `remotePort`; resolves once kubectl says it forwards. */
export function portForward(kubeconfig: string, namespace: string, target: string, remotePort: number, timeoutMs = 30_000): Promise<PortForward> {
  const child = spawn(tools.kubectl(), ["--kubeconfig", kubeconfig, "-n", namespace, "port-forward", "--address", "127.0.0.1", target, `:${remotePort}`], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`kubectl port-forward ${target} did not start within ${timeoutMs} ms: ${output}`));
    }, timeoutMs);
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve({ port: Number(m[1]), stop: () => child.kill() });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`kubectl port-forward ${target} exited (${code}): ${output}`));
    });
  });
}
