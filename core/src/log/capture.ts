import { loggerTo } from "./logger.ts";
import type { LogLevel, Logger } from "./logger.ts";

/** What `captureLogs` returns. */
export interface CapturedLogs {
  /** Writes into memory instead of stdout, configured exactly as `createLogger`'s. */
  logger: Logger;
  /** Every line written so far, parsed. */
  lines(): Array<Record<string, unknown>>;
  /** Everything written so far, as written: search it for a value that must not appear. */
  text(): string;
}

export interface CaptureLogsOptions {
  /** Lines below this level are dropped. Default: "debug", so a test sees everything. */
  level?: LogLevel;
}

/**
 * A logger for tests that keeps its output in memory, e.g. to assert that a
 * password never appears in any line:
 *
 *     const logs = captureLogs();
 *     await reconcile(logs.logger);
 *     expect(logs.text()).not.toContain(password);
 */
export function captureLogs(options: CaptureLogsOptions = {}): CapturedLogs {
  const chunks: string[] = [];
  // A plain synchronous sink rather than a Writable: every line is in
  // `chunks` as soon as the log call returns, with no stream buffering.
  const logger = loggerTo(options.level ?? "debug", { write: (line: string) => void chunks.push(line) });
  const text = (): string => chunks.join("");
  return {
    logger,
    text,
    lines: () =>
      text()
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
