import { request } from "node:https";

export interface TlsClient {
  ca?: string;
  cert?: string;
  key?: string;
  /** For components that serve a self-signed certificate of their own (controller-manager, scheduler). */
  insecure?: boolean;
}

/** GET over HTTPS; resolves with the status code and body. */
export function httpsGet(url: string, tls: TlsClient, timeoutMs = 2_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "GET", ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: !tls.insecure, timeout: timeoutMs },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}
