// Structured JSON logs.
export { captureLogs } from "./capture.ts";
export type { CaptureLogsOptions, CapturedLogs } from "./capture.ts";
export { createLogger } from "./logger.ts";
export type { CreateLoggerOptions, LogFields, LogLevel, Logger } from "./logger.ts";
