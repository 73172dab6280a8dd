/** A result cell as text: binary strings decoded as UTF-8, JSON values serialized, NULL as "". */
export function cellText(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "object") return JSON.stringify(v);
  return `${v as string | number | bigint | boolean}`;
}
