import pino from "pino";
import type { DestinationStream, Logger as PinoLogger, LoggerOptions as PinoOptions } from "pino";

/** The levels Stateward logs at; lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Structured fields of one log line, or bindings of a child logger. */
export type LogFields = Record<string, unknown>;

/**
 * What the rest of Stateward logs through. Our own small interface, so no
 * other module depends on pino's types and the backend could change.
 *
 * Every call writes one JSON object on one line:
 * `{"level":"info","time":"2025-01-01T00:00:00.000Z","controller":"mysqluser",…,"msg":"…"}`.
 * Put errors under the key `err` (`logger.error("apply failed", { err })`):
 * they are written with their type, message and stack.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /**
   * A logger that adds `bindings` to every line, e.g.
   * `logger.child({ controller, namespace, name, reconcileID })` for one
   * reconcile.
   */
  child(bindings: LogFields): Logger;
}

export interface CreateLoggerOptions {
  /** Lines below this level are dropped. Default: "info". */
  level?: LogLevel;
  /**
   * Where the lines go. Default: standard output, written synchronously to
   * file descriptor 1 (pino.destination with sync: true). An operator logs
   * little, and the lines just before a crash or an OOM kill are the ones
   * that explain it; pino's default asynchronous buffer could lose them.
   */
  destination?: NodeJS.WritableStream;
}

/**
 * Field paths whose values are replaced by "[REDACTED]". Defence in depth
 * for the rule that secrets never reach logs: code must not log them in the
 * first place, but if a password, an S3 secret key, a token or a Secret's
 * `data` is passed as a field anyway, at the top level or one object down,
 * its value is not written. Deeper paths and message text are not covered.
 */
const redactedPaths: readonly string[] = [
  "password",
  "*.password",
  "secretAccessKey",
  "*.secretAccessKey",
  "token",
  "*.token",
  "data",
];

/** Creates the JSON logger described on `Logger`. */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  return loggerTo(options.level ?? "info", options.destination);
}

/**
 * The one place the pino configuration lives; `captureLogs` uses it with an
 * in-memory sink so tests see exactly what production writes.
 */
export function loggerTo(level: LogLevel, destination: DestinationStream | NodeJS.WritableStream | undefined): Logger {
  const options: PinoOptions = {
    level,
    // No pid or hostname: in a Pod the pid is 1 and the hostname is the Pod
    // name, which the log collector already attaches.
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: {
      // "info" rather than pino's 30: readable without a lookup table, and
      // what most log pipelines expect in a `level` field.
      level: (label) => ({ level: label }),
    },
    serializers: {
      err: pino.stdSerializers.err,
      // `error` is a common slip for `err`; without a serializer an Error
      // would be written as {} and the message lost.
      error: pino.stdSerializers.err,
    },
    redact: { paths: [...redactedPaths], censor: "[REDACTED]" },
  };
  return wrap(pino(options, destination ?? pino.destination({ dest: 1, sync: true })));
}

function wrap(p: PinoLogger): Logger {
  // Fields first, message second is pino's signature; passing no further
  // arguments means a "%s" in the message is written as is, not interpolated.
  return {
    debug: (msg, fields) => (fields ? p.debug(fields, msg) : p.debug(msg)),
    info: (msg, fields) => (fields ? p.info(fields, msg) : p.info(msg)),
    warn: (msg, fields) => (fields ? p.warn(fields, msg) : p.warn(msg)),
    error: (msg, fields) => (fields ? p.error(fields, msg) : p.error(msg)),
    child: (bindings) => wrap(p.child(bindings)),
  };
}
