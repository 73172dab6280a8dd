// Which `config` changes a running server can take without a restart, and
// as what value. my.cnf and SET GLOBAL do not speak quite the same language:
// a my.cnf "256M" is 268435456 to SET GLOBAL, and a quoted or unusual value
// is better left to a restart than guessed at.

/** A change of my.cnf between what the servers run and what the spec asks for. */
export interface SettingsChange {
  /** Settings added or given a new value, with the new value. */
  changed: Map<string, string>;
  /** Settings no longer there: their default is not known here, so only a restart applies that. */
  removed: string[];
}

/** The `name = value` lines of the [mysqld] section of a my.cnf renderMyCnf wrote. */
export function parseMyCnf(text: string): Map<string, string> {
  const settings = new Map<string, string>();
  let section = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1] ?? "";
      continue;
    }
    const eq = line.indexOf("=");
    if (section !== "mysqld" || eq < 0) continue;
    settings.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  return settings;
}

export function settingsChange(running: ReadonlyMap<string, string>, desired: ReadonlyMap<string, string>): SettingsChange {
  const changed = new Map([...desired].filter(([name, value]) => running.get(name) !== value));
  const removed = [...running.keys()].filter((name) => !desired.has(name));
  return { changed, removed };
}

const SIZE_SUFFIX: Record<string, number> = { K: 1024, M: 1024 ** 2, G: 1024 ** 3, T: 1024 ** 4 };

/**
 * The value SET GLOBAL takes for a my.cnf value: an integer (size suffixes
 * K, M, G, T multiplied out, as the server reads them in option files), or a
 * plain word such as ON, OFF or an enum value; undefined for anything else
 * (quotes, spaces, expressions), which then needs a restart.
 */
export function runtimeValue(value: string): number | string | undefined {
  const size = /^(\d+)([KMGT])?$/i.exec(value);
  if (size) {
    const n = Number(size[1]) * (size[2] ? (SIZE_SUFFIX[size[2].toUpperCase()] ?? 1) : 1);
    return Number.isSafeInteger(n) ? n : undefined;
  }
  if (/^\d+\.\d+$/.test(value)) return Number(value);
  if (/^[A-Za-z][A-Za-z0-9_,.-]*$/.test(value)) return value;
  return undefined;
}
