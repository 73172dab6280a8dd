// Bind addresses written the way controller-runtime's flags take them
// (--health-probe-bind-address, --metrics-bind-address), so the same values
// work in a Deployment written for either.

/** Where to listen. `host` undefined means every interface, as Go's ":8081" does. */
export interface ListenAddress {
  host: string | undefined;
  port: number;
}

/**
 * Parses `":8081"`, `"127.0.0.1:8081"`, `"[::1]:8081"` or `"localhost:0"`
 * (port 0 picks a free port). `"0"` and `""` mean the server is disabled and
 * give `undefined`, as in controller-runtime. Anything else throws, naming
 * the address, rather than silently listening somewhere unexpected.
 */
export function parseBindAddress(address: string): ListenAddress | undefined {
  const trimmed = address.trim();
  if (trimmed === "" || trimmed === "0") return undefined;

  const colon = trimmed.lastIndexOf(":");
  if (colon < 0) throw new Error(`invalid bind address "${address}": expected [host]:port, or "0" to disable`);
  let host = trimmed.slice(0, colon);
  const portText = trimmed.slice(colon + 1);

  if (host.startsWith("[") && host.endsWith("]")) {
    host = host.slice(1, -1);
  } else if (host.includes(":")) {
    // An IPv6 address without brackets: its last colon is not a port separator.
    throw new Error(`invalid bind address "${address}": write IPv6 hosts in brackets, as in "[::1]:8081"`);
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new Error(`invalid bind address "${address}": port must be a number from 0 to 65535`);
  }
  return { host: host === "" ? undefined : host, port: Number(portText) };
}
