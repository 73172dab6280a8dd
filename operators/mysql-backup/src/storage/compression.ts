// Compression of stored objects, with Node's own zlib (gzip and zstd), so
// that a user can decompress any object with the stock `gunzip` or `zstd -d`.
import { PassThrough, type Transform } from "node:stream";
import zlib from "node:zlib";
import { BackupError } from "../errors.ts";

export type Compression = "gzip" | "zstd" | "none";

export const compressions: readonly Compression[] = ["gzip", "zstd", "none"];

/** File name extension of an object stored with each compression. */
export const compressionExtension: Readonly<Record<Compression, string>> = { gzip: ".gz", zstd: ".zst", none: "" };

/**
 * Default levels: 6 for gzip is `gzip`'s own default (the `mariadb-dump |
 * gzip` pipeline the benchmark compares with); 3 for zstd is `zstd`'s.
 */
export const defaultCompressionLevel: Readonly<Record<Compression, number>> = { gzip: 6, zstd: 3, none: 0 };

// zlib hands back output in chunks of this size; 64 KiB rather than the
// default 16 KiB means a quarter of the callbacks for the same bytes.
const chunkSize = 64 * 1024;

export function createCompressor(compression: Compression, level?: number): Transform {
  switch (compression) {
    case "gzip":
      return zlib.createGzip({ level: level ?? defaultCompressionLevel.gzip, chunkSize });
    case "zstd":
      return zlib.createZstdCompress({
        chunkSize,
        params: {
          [zlib.constants.ZSTD_c_compressionLevel]: level ?? defaultCompressionLevel.zstd,
          // A content checksum in the frame, as the `zstd` CLI writes by default.
          [zlib.constants.ZSTD_c_checksumFlag]: 1,
        },
      });
    case "none":
      return new PassThrough();
  }
}

export function createDecompressor(compression: Compression): Transform {
  switch (compression) {
    case "gzip":
      return zlib.createGunzip({ chunkSize });
    case "zstd":
      return zlib.createZstdDecompress({ chunkSize });
    case "none":
      return new PassThrough();
  }
}

/** Recognizes gzip and zstd by their magic bytes; anything else is taken as plain. */
export function detectCompression(head: Buffer): Compression {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  if (head.length >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return "zstd";
  return "none";
}

export function parseCompression(value: string): Compression {
  if ((compressions as readonly string[]).includes(value)) return value as Compression;
  throw new BackupError("InvalidOptions", `unknown compression "${value}" (expected one of ${compressions.join(", ")})`);
}
