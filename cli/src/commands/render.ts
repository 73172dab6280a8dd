// -o json|yaml output. Apart from common.ts, which `stateward run` loads too: the
// manager never writes YAML, and the YAML library costs it memory at every start.
import { stringify } from "yaml";

/** `data` as the format asks; text is the caller's. */
export function render(format: "json" | "yaml", data: unknown): string {
  return format === "json" ? `${JSON.stringify(data, null, 2)}\n` : stringify(data, { lineWidth: 0, aliasDuplicateObjects: false });
}
