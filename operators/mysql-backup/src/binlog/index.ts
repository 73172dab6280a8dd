// Binary-log archiving: a MariaDB server's binlog streamed over the
// replication protocol into standard binlog files in S3, with an index.
export { archiveIndexFileName, archiveIndexFormat, archiveIndexFormatVersion, parseArchiveIndex, type ArchiveIndex, type ArchivedFile } from "./archive-index.ts";
export { ArchiveWriter, defaultMaxFileAgeMs, defaultMaxFileBytes, type ArchiveStorage, type RotationOptions, type SourceInfo } from "./archive-writer.ts";
export { BinlogArchiver, archiveLocation, archiveStorage, type ArchiveProgress, type BinlogArchiverOptions, type RetentionOptions } from "./archiver.ts";
export { selectPrunable, type KeptBackup, type RetentionChoice } from "./retention.ts";
export { BinlogStream, currentBinlogPosition, defaultHeartbeatMs, serverIdAt, type BinlogSource, type BinlogStreamOptions } from "./binlog-stream.ts";
export { BINLOG_MAGIC, BinlogFormatError, EventType, parseGtidList, readBinlogFile, type BinlogEvent, type EventHeader } from "./events.ts";
export { describeDivergence, divergence, formatGtid, formatPosition, parseGtid, parsePosition, type Divergence, type Gtid, type GtidPosition } from "./gtid.ts";
export { TransactionAssembler, type StreamItem, type Transaction } from "./transactions.ts";
export { planReplay, replayBinlog, type RecoveryPoint, type ReplayOptions, type ReplayPlan, type ReplayResult } from "./replay.ts";
