// Splits a stream of SQL (a backup object or a mysqldump file) into the
// statements a `mysql`/`mariadb` client would send, the way that client does:
// a statement ends at the delimiter outside strings, quoted identifiers and
// comments; `DELIMITER xx` on a line of its own changes the delimiter; the
// bodies of `/*! … */` version comments are statement text, not comments.
// Inside strings a backslash escapes the next byte unless the session's
// sql_mode has NO_BACKSLASH_ESCAPES: the client learns that from the server
// after each statement; the splitter follows the `SET sql_mode` statements it
// splits (see SqlModeTracker), which is where a dump changes it.
// Works on bytes, so any character set (and raw binary in strings, as
// mysqldump writes BLOBs) passes through unchanged.

export interface Statement {
  /**
   * The statement's bytes as a latin1 string (one character per byte), so
   * that sending it over a connection with the binary character set
   * reproduces the exact bytes. Use `text` for a readable UTF-8 form.
   */
  sql: string;
  /** 1-based line of the input where the statement starts. */
  line: number;
}

/** The statement as readable text, for messages and tests. */
export function statementText(statement: Statement): string {
  return Buffer.from(statement.sql, "latin1").toString("utf8");
}

/** Where the scanner is: plain SQL, inside a string, identifier or comment. */
const Scan = {
  normal: 0,
  singleQuote: 1,
  doubleQuote: 2,
  backtick: 3,
  lineComment: 4,
  blockComment: 5,
} as const;
type State = (typeof Scan)[keyof typeof Scan];

const NL = 0x0a;
const SPACE = 0x20;
const TAB = 0x09;
const CR = 0x0d;
const QUOTE = 0x27;
const DQUOTE = 0x22;
const BACKTICK = 0x60;
const BACKSLASH = 0x5c;
const HASH = 0x23;
const DASH = 0x2d;
const SLASH = 0x2f;
const STAR = 0x2a;
const BANG = 0x21;
const UPPER_M = 0x4d;

function isSpace(b: number): boolean {
  return b === SPACE || b === TAB || b === NL || b === CR || b === 0x0b || b === 0x0c;
}

const delimiterKeyword = Buffer.from("delimiter");

/**
 * For a delimiter, the bytes that need no decision inside a statement (in the
 * normal state, once it has content): everything but line breaks (counted),
 * quotes, comment starts and the delimiter's first byte. Most bytes of an
 * INSERT's rows are such bytes, and skipping them in a tight loop is what
 * keeps the splitter off a restore's critical path.
 */
function plainBytesFor(delimiter: Buffer): Uint8Array {
  const plain = new Uint8Array(256).fill(1);
  for (const b of [NL, QUOTE, DQUOTE, BACKTICK, HASH, DASH, SLASH, delimiter[0] as number]) plain[b] = 0;
  return plain;
}

/**
 * Statements up to this size are put together in one buffer the splitter
 * keeps, instead of a new one each: a restore's statements are about 1 MiB
 * each, and fresh memory costs a page fault per 4 KiB, which on a VM costs
 * more than the copy (docs/performance.md, finding 10).
 */
const REUSED_BUFFER_MAX = 4 * 1024 * 1024;

/** Incremental splitter: `push` chunks, then `end`; each returns the statements completed. */
export class StatementSplitter {
  private delimiter: Buffer = Buffer.from(";");
  private plain: Uint8Array = plainBytesFor(this.delimiter);
  private state: State = Scan.normal;
  /** Bytes of the current statement from earlier chunks. */
  private pieces: Buffer[] = [];
  /** Where statements of several pieces are joined (see REUSED_BUFFER_MAX). */
  private joinBuffer: Buffer = Buffer.alloc(0);
  /** Bytes not scanned yet because they need more input to be decided. */
  private carry: Buffer = Buffer.alloc(0);
  private hasContent = false;
  /** Only whitespace since the last line break (where DELIMITER may appear). */
  private atLineStart = true;
  private line = 1;
  private statementLine = 1;
  private ended = false;
  /** What the statements split so far did to sql_mode: whether a backslash in a string escapes. */
  private readonly sqlMode = new SqlModeTracker();

  push(chunk: Buffer): Statement[] {
    if (this.ended) throw new Error("StatementSplitter: push after end");
    const work = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    return this.scan(work, false);
  }

  end(): Statement[] {
    this.ended = true;
    const out = this.scan(this.carry, true);
    if (this.hasContent) out.push(this.take(Buffer.alloc(0)));
    this.pieces = [];
    return out;
  }

  /** The current statement, closed with `tail`; resets for the next one. */
  private take(tail: Buffer): Statement {
    const sql = this.pieces.length === 0 ? tail.toString("latin1") : this.joined(tail);
    this.pieces = [];
    this.hasContent = false;
    this.sqlMode.follow(sql);
    return { sql, line: this.statementLine };
  }

  /** The pieces and `tail` as one latin1 string. */
  private joined(tail: Buffer): string {
    const size = this.pieces.reduce((n, p) => n + p.length, tail.length);
    if (size > REUSED_BUFFER_MAX) return Buffer.concat([...this.pieces, tail], size).toString("latin1");
    if (this.joinBuffer.length < size) this.joinBuffer = Buffer.allocUnsafe(Math.min(REUSED_BUFFER_MAX, Math.max(size, 2 * this.joinBuffer.length)));
    let at = 0;
    for (const piece of this.pieces) at += piece.copy(this.joinBuffer, at);
    tail.copy(this.joinBuffer, at);
    return this.joinBuffer.toString("latin1", 0, size);
  }

  private scan(work: Buffer, final: boolean): Statement[] {
    const out: Statement[] = [];
    const n = work.length;
    let segStart = 0;
    let i = 0;
    let d0 = this.delimiter[0];
    let plain = this.plain;
    let state = this.state;
    // Stops the scan at `i`: the rest waits for more input (unless final).
    let needMore = false;
    // A statement starts at its first byte of SQL: whitespace and comments
    // before it are dropped, wherever the chunks were cut.
    const content = (): void => {
      if (!this.hasContent) {
        this.hasContent = true;
        this.statementLine = this.line;
        this.pieces = [];
        segStart = i;
      }
      this.atLineStart = false;
    };

    while (i < n) {
      const b = work[i] as number;
      if (state === Scan.normal) {
        const match = b === d0 ? this.matchDelimiter(work, i, final) : "no";
        if (match === "partial") {
          needMore = true;
          break;
        }
        if (match === "yes") {
          if (this.hasContent) out.push(this.take(work.subarray(segStart, i)));
          else this.pieces = [];
          i += this.delimiter.length;
          segStart = i;
          this.atLineStart = false;
          continue;
        }
        if (this.atLineStart && !this.hasContent && (b === 0x44 || b === 0x64)) {
          // "DELIMITER x" on a line of its own (what the client recognizes).
          const r = this.delimiterCommand(work, i, final);
          if (r === "more") {
            needMore = true;
            break;
          }
          if (r !== undefined) {
            this.delimiter = r.delimiter;
            d0 = this.delimiter[0];
            this.plain = plain = plainBytesFor(r.delimiter);
            this.pieces = [];
            i = r.next;
            segStart = i;
            this.line += 1;
            this.atLineStart = true;
            continue;
          }
        }
        switch (b) {
          case NL:
            this.line += 1;
            this.atLineStart = true;
            i += 1;
            continue;
          case SPACE:
          case TAB:
          case CR:
            i += 1;
            continue;
          case QUOTE:
            state = Scan.singleQuote;
            content();
            i += 1;
            continue;
          case DQUOTE:
            state = Scan.doubleQuote;
            content();
            i += 1;
            continue;
          case BACKTICK:
            state = Scan.backtick;
            content();
            i += 1;
            continue;
          case HASH:
            state = Scan.lineComment;
            i += 1;
            continue;
          case DASH: {
            if (i + 2 >= n && !final) {
              needMore = true;
              break;
            }
            const c1 = work[i + 1];
            const c2 = work[i + 2];
            // "-- " needs whitespace (or the end) after the dashes; "--x" is two minus signs.
            if (c1 === DASH && (c2 === undefined || isSpace(c2) || c2 < SPACE)) {
              state = Scan.lineComment;
              i += 2;
              continue;
            }
            content();
            i += 1;
            continue;
          }
          case SLASH: {
            if (i + 3 >= n && !final) {
              needMore = true;
              break;
            }
            if (work[i + 1] === STAR) {
              const c2 = work[i + 2];
              if (c2 === BANG || (c2 === UPPER_M && work[i + 3] === BANG)) {
                // A version comment: its body is SQL the server runs.
                content();
                i += c2 === BANG ? 3 : 4;
                continue;
              }
              state = Scan.blockComment;
              i += 2;
              continue;
            }
            content();
            i += 1;
            continue;
          }
          default:
            content();
            i += 1;
            // Inside a statement now: run past the bytes that decide nothing.
            while (i < n && plain[work[i] as number] === 1) i += 1;
            continue;
        }
        if (needMore) break;
      } else if (state === Scan.singleQuote || state === Scan.doubleQuote) {
        const close = state === Scan.singleQuote ? QUOTE : DQUOTE;
        // With NO_BACKSLASH_ESCAPES a backslash is a byte like any other ('C:\' is C, colon, backslash).
        const escape = this.sqlMode.backslashEscapes ? BACKSLASH : close;
        // Fast path: skip to the next byte that matters inside a string.
        let j = i;
        while (j < n) {
          const c = work[j] as number;
          if (c === close || c === escape || c === NL) break;
          j += 1;
        }
        i = j;
        if (i >= n) break;
        const c = work[i] as number;
        if (c === BACKSLASH && escape === BACKSLASH) {
          if (i + 1 >= n && !final) {
            needMore = true;
            break;
          }
          if (work[i + 1] === NL) this.line += 1;
          i += 2;
        } else if (c === NL) {
          this.line += 1;
          i += 1;
        } else {
          state = Scan.normal;
          i += 1;
        }
      } else if (state === Scan.backtick) {
        const j = work.indexOf(BACKTICK, i);
        const end = j === -1 ? n : j;
        for (let k = i; k < end; k++) if (work[k] === NL) this.line += 1;
        if (j === -1) {
          i = n;
          break;
        }
        state = Scan.normal;
        i = j + 1;
      } else if (state === Scan.lineComment) {
        const j = work.indexOf(NL, i);
        if (j === -1) {
          i = n;
          break;
        }
        state = Scan.normal;
        this.line += 1;
        this.atLineStart = true;
        i = j + 1;
      } else {
        // Block comment: until "*/".
        let j = i;
        let closed = false;
        while (j < n) {
          const c = work[j];
          if (c === NL) this.line += 1;
          else if (c === STAR) {
            if (j + 1 >= n && !final) break;
            if (work[j + 1] === SLASH) {
              closed = true;
              break;
            }
          }
          j += 1;
        }
        if (closed) {
          state = Scan.normal;
          i = j + 2;
        } else if (j < n) {
          // A "*" at the very end: wait for the next byte.
          i = j;
          needMore = true;
          break;
        } else {
          i = n;
        }
      }
    }

    this.state = state;
    const stop = Math.min(i, n);
    if (stop > segStart) this.pieces.push(work.subarray(segStart, stop));
    // Whitespace and comments between statements need not be kept.
    if (!this.hasContent && this.state !== Scan.singleQuote && this.state !== Scan.doubleQuote && this.state !== Scan.backtick) {
      this.pieces = [];
    }
    this.carry = needMore || stop < n ? Buffer.from(work.subarray(stop)) : Buffer.alloc(0);
    if (final && this.carry.length > 0) {
      // Nothing more will come: what is left is the statement's tail.
      this.pieces.push(this.carry);
      this.carry = Buffer.alloc(0);
    }
    return out;
  }

  /** Whether the delimiter starts at `at`; "partial" when the input ends inside a possible match. */
  private matchDelimiter(work: Buffer, at: number, final: boolean): "yes" | "no" | "partial" {
    const delim = this.delimiter;
    for (let k = 0; k < delim.length; k++) {
      if (at + k >= work.length) return final ? "no" : "partial";
      if (work[at + k] !== delim[k]) return "no";
    }
    return "yes";
  }

  /**
   * At a line start: "DELIMITER <token>" up to the end of the line? Returns
   * the new delimiter and where the next line starts, "more" if the line is
   * not complete yet, undefined if this is not a DELIMITER command.
   */
  private delimiterCommand(work: Buffer, at: number, final: boolean): { delimiter: Buffer; next: number } | "more" | undefined {
    const n = work.length;
    for (let k = 0; k < delimiterKeyword.length; k++) {
      const c = work[at + k];
      if (c === undefined) return final ? undefined : "more";
      if ((c | 0x20) !== delimiterKeyword[k]) return undefined;
    }
    const after = work[at + delimiterKeyword.length];
    if (after === undefined) return final ? undefined : "more";
    if (after !== SPACE && after !== TAB) return undefined;
    let eol = work.indexOf(NL, at);
    if (eol === -1) {
      if (!final) return "more";
      eol = n;
    }
    const rest = work.subarray(at + delimiterKeyword.length, eol).toString("latin1").trim();
    const token = rest.split(/[ \t\r]/)[0] ?? "";
    if (token === "") return undefined;
    return { delimiter: Buffer.from(token, "latin1"), next: Math.min(eol + 1, n) };
  }
}

/** Longer statements are not looked at for sql_mode: a SET of it is short, a row batch is not. */
const SET_STATEMENT_MAX = 4096;

const SQL_MODE_VARIABLE = /^(?:(?:SESSION|LOCAL)\s+|@@(?:SESSION\.|LOCAL\.)?)?sql_mode$/i;

/**
 * Follows what `SET` statements do to the session's sql_mode, as far as backslash escapes go: a
 * literal value (`SET SQL_MODE = 'NO_BACKSLASH_ESCAPES,…'`, as this project's post-data objects write
 * before a routine created under that mode), a user variable saved from it and put back
 * (`SET @saved_sql_mode = @@sql_mode` … `SET sql_mode = @saved_sql_mode`, as mysqldump writes around
 * each trigger and routine), also inside a `/*!NNNNN … *\/` version comment. Anything else leaves it.
 * The session starts with backslash escapes on: every dump sets its sql_mode before its data.
 */
export class SqlModeTracker {
  backslashEscapes = true;
  /** User variables holding a saved sql_mode: whether it had backslash escapes. */
  private readonly saved = new Map<string, boolean>();

  follow(sql: string): void {
    if (sql.length > SET_STATEMENT_MAX || !/sql_mode/i.test(sql)) return;
    const body = sql.trim().replace(/^\/\*!\d*\s*([\s\S]*?)\s*\*\/$/, "$1");
    const set = /^SET\s+([\s\S]*)$/i.exec(body);
    if (!set) return;
    for (const assignment of splitAssignments(set[1] ?? "")) {
      const eq = assignment.indexOf("=");
      if (eq === -1) continue;
      const name = assignment.slice(0, eq).replace(/:$/, "").trim();
      const value = assignment.slice(eq + 1).trim();
      if (SQL_MODE_VARIABLE.test(name)) {
        const literal = /^(['"])([\s\S]*)\1$/.exec(value);
        if (literal) this.backslashEscapes = !(literal[2] ?? "").split(",").some((m) => m.trim().toUpperCase() === "NO_BACKSLASH_ESCAPES");
        else if (/^@[\w$.]+$/.test(value)) this.backslashEscapes = this.saved.get(value.toLowerCase()) ?? true;
        else if (/^DEFAULT$/i.test(value)) this.backslashEscapes = true;
      } else if (/^@[\w$.]+$/.test(name) && /^@@/.test(value) && SQL_MODE_VARIABLE.test(value)) {
        this.saved.set(name.toLowerCase(), this.backslashEscapes);
      }
    }
  }
}

/** `a = 'x,y', @b = @@sql_mode` → its assignments: commas inside quotes do not split. */
function splitAssignments(list: string): string[] {
  const out: string[] = [];
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === ",") {
      out.push(list.slice(start, i));
      start = i + 1;
    }
  }
  out.push(list.slice(start));
  return out;
}

/** Splits a whole text at once (tests, small objects). */
export function splitStatements(sql: string | Buffer): Statement[] {
  const splitter = new StatementSplitter();
  const bytes = typeof sql === "string" ? Buffer.from(sql, "utf8") : sql;
  return [...splitter.push(bytes), ...splitter.end()];
}
