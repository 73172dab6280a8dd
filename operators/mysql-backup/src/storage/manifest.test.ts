import { describe, expect, it } from "vitest";
import { BackupError } from "../errors.ts";
import { manifestFormat, parseManifest, serializeManifest, type BackupManifest } from "./manifest.ts";

const sha = "a".repeat(64);
const manifest: BackupManifest = {
  format: manifestFormat,
  formatVersion: 1,
  createdAt: "2025-01-01T00:00:00.000Z",
  completedAt: "2025-01-01T00:01:00.000Z",
  server: { version: "10.11.19-MariaDB", flavor: "MariaDB" },
  position: { binlogFile: "mysql-bin.000001", binlogPosition: 1234, gtid: "0-1-55" },
  compression: "gzip",
  databases: ["shop"],
  objects: [
    { key: "0001-shop/schema.sql.gz", kind: "schema", database: "shop", size: 10, uncompressedSize: 20, sha256: sha },
    { key: "0001-shop/data/0001-order.0001.sql.gz", kind: "data", database: "shop", table: "order", part: 1, rows: 3, size: 10, uncompressedSize: 20, sha256: sha },
  ],
  totals: { objects: 2, size: 20, uncompressedSize: 40, rows: 3 },
};

const parse = (value: unknown): BackupManifest => parseManifest(JSON.stringify(value), "s3://b/p/manifest.json");

describe("manifest", () => {
  it("reads back what it writes", () => {
    expect(parseManifest(serializeManifest(manifest), "x")).toEqual(manifest);
  });

  it("refuses newer format versions, naming the location", () => {
    expect(() => parse({ ...manifest, formatVersion: 2 })).toThrow(/s3:\/\/b\/p\/manifest.json: format version 2 was written by a newer Stateward/);
  });

  it("refuses what is not a manifest", () => {
    expect(() => parseManifest("{not json", "x")).toThrow(BackupError);
    expect(() => parse({ ...manifest, format: "other" })).toThrow(/"format"/);
    expect(() => parse({ ...manifest, compression: "lz4" })).toThrow(/unknown compression/);
  });

  it("refuses objects a restore could not trust", () => {
    const withObject = (o: Record<string, unknown>) => ({ ...manifest, objects: [{ ...manifest.objects[0], ...o }] });
    expect(() => parse(withObject({ sha256: "xyz" }))).toThrow(/not a hex SHA-256/);
    expect(() => parse(withObject({ key: "../elsewhere/x.sql" }))).toThrow(/not a relative object key/);
    expect(() => parse(withObject({ key: "/abs.sql" }))).toThrow(/not a relative object key/);
    expect(() => parse(withObject({ kind: "other" }))).toThrow(/unknown kind/);
    expect(() => parse(withObject({ size: -1 }))).toThrow(/"size" must be a non-negative integer/);
    expect(() => parse({ ...manifest, objects: [manifest.objects[0], manifest.objects[0]] })).toThrow(/listed twice/);
  });

  it("takes a missing position as none", () => {
    expect(parse({ ...manifest, position: null }).position).toBeNull();
  });
});
