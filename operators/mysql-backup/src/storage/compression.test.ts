import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createCompressor, createDecompressor, detectCompression, parseCompression, type Compression } from "./compression.ts";

async function through(stream: NodeJS.ReadWriteStream, input: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const out = Readable.from([input]).pipe(stream);
  for await (const chunk of out) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("compression", () => {
  it.each(["gzip", "zstd", "none"] as Compression[])("round-trips with %s and is recognized by its magic bytes", async (compression) => {
    const sql = Buffer.from("INSERT INTO t VALUES (1,'表');\n".repeat(1000));
    const stored = await through(createCompressor(compression), sql);
    expect(detectCompression(stored)).toBe(compression);
    expect(await through(createDecompressor(compression), stored)).toEqual(sql);
    if (compression !== "none") expect(stored.length).toBeLessThan(sql.length / 10);
  });

  it("refuses unknown names", () => {
    expect(() => parseCompression("lz4")).toThrow(/unknown compression "lz4"/);
  });
});
