// Where each object of a backup goes, relative to the backup's folder:
//
//   manifest.json
//   0001-shop/schema.sql.gz
//   0001-shop/data/0003-orders.0001.sql.gz      table 3 of database 1, part 1
//   0001-shop/post-data.sql.gz
//
// Names are reduced to [A-Za-z0-9_.-] for readability and portability (any
// S3-compatible store, any file system a user downloads to); the numbers in
// front keep keys unique. Anything of this shape under a folder is taken to
// belong to the backup there — and only that is ever deleted by a cleanup,
// so a wrong prefix cannot wipe someone else's files.
import { compressionExtension, type Compression } from "./compression.ts";
import { manifestFileName } from "./manifest.ts";

function numbered(index: number, name: string): string {
  const safe = name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 48);
  return `${String(index).padStart(4, "0")}-${safe}`;
}

/** The folder of the `index`-th (1-based) database of a backup. */
export function databaseFolder(index: number, database: string): string {
  return numbered(index, database);
}

export function schemaKey(folder: string, compression: Compression): string {
  return `${folder}/schema.sql${compressionExtension[compression]}`;
}

export function postDataKey(folder: string, compression: Compression): string {
  return `${folder}/post-data.sql${compressionExtension[compression]}`;
}

/** Part `part` (1-based) of the `tableIndex`-th (1-based) table. */
export function dataKey(folder: string, tableIndex: number, table: string, part: number, compression: Compression): string {
  return `${folder}/data/${numbered(tableIndex, table)}.${String(part).padStart(4, "0")}.sql${compressionExtension[compression]}`;
}

const objectPattern = /^\d{4,}-[A-Za-z0-9_.-]*\/(?:schema\.sql|post-data\.sql|data\/\d{4,}-[A-Za-z0-9_.-]*\.\d{4,}\.sql)(?:\.gz|\.zst)?$/;

/** True for a key (relative to a backup folder) that this layout produces, the manifest included. */
export function isBackupKey(relative: string): boolean {
  return relative === manifestFileName || objectPattern.test(relative);
}
