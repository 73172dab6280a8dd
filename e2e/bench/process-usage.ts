// What another process used over a window of time, read from /proc as the
// kernel accounts it: its peak resident memory (what the kubelet and the OOM
// killer see) and its CPU time.
//
// Memory has two sources, because each alone can mislead: samples of VmRSS
// every 250 ms (a timeline, but they can miss a short spike), and the
// kernel's own high-water mark VmHWM, reset at the start of the window by
// writing 5 to /proc/<pid>/clear_refs (Linux >= 4.0) so it covers only this
// window and not, say, the process's start-up. Where the reset is refused the
// peak is the sampled one, and `exact` says so.
import { readFileSync, writeFileSync } from "node:fs";

/** USER_HZ: the unit of /proc/<pid>/stat's CPU times, 100 on every Linux architecture Node runs on. */
const clockTicksPerSecond = 100;

/** VmRSS and VmHWM of `pid`, in bytes. */
export function residentMemory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kB = (field: string): number => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status);
    if (!m) throw new Error(`/proc/${pid}/status has no ${field}`);
    return Number(m[1]) * 1024;
  };
  return { rss: kB("VmRSS"), hwm: kB("VmHWM") };
}

/**
 * User + system CPU seconds `pid` has used since it started (all its
 * threads); with `children`, plus those of its children that have exited and
 * been waited for (Node waits for every child it spawned).
 */
export function cpuSeconds(pid: number | "self", opts: { children?: boolean } = {}): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name, which is in parentheses and may itself hold spaces or parentheses.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime, stime, cutime, cstime are fields 14 to 17 of the whole line: 12 to 15 after the name.
  const ticks = (i: number) => Number(fields[i]);
  return (ticks(11) + ticks(12) + (opts.children ? ticks(13) + ticks(14) : 0)) / clockTicksPerSecond;
}

export interface UsageWindow {
  /** RSS when the window opened. */
  startBytes: number;
  /** The larger of the kernel's high-water mark (when `exact`) and the largest sample. */
  peakBytes: number;
  /** Largest VmRSS sample. */
  sampledPeakBytes: number;
  /** True when VmHWM could be reset at the start, so `peakBytes` misses no spike. */
  exact: boolean;
  samples: number;
  /** CPU seconds (user + system) used within the window. */
  cpuSeconds: number;
  /** What `detail` returned at the largest sample (e.g. the process's own memoryUsage()). */
  atPeak?: unknown;
}

export interface ProcessWatch {
  stop(): Promise<UsageWindow>;
}

/**
 * Opens a window on `pid`: resets its memory high-water mark, notes its CPU
 * time, then samples its RSS every `everyMs` until stop(). `detail`, when
 * given, is asked for at each new largest sample (its failures are ignored:
 * a busy process may answer late, and the /proc figures do not depend on it).
 */
export function watchProcess(pid: number, everyMs = 250, detail?: () => Promise<unknown>): ProcessWatch {
  let exact = true;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    exact = false;
  }
  const cpuAtStart = cpuSeconds(pid);
  const startBytes = residentMemory(pid).rss;
  let sampledPeakBytes = startBytes;
  let samples = 1;
  let atPeak: unknown;
  let pending: Promise<void> = Promise.resolve();
  const sample = () => {
    try {
      const { rss } = residentMemory(pid);
      samples += 1;
      if (rss > sampledPeakBytes) {
        sampledPeakBytes = rss;
        if (detail) {
          pending = detail().then(
            (d) => {
              if (rss === sampledPeakBytes) atPeak = d;
            },
            () => undefined,
          );
        }
      }
    } catch {
      // The process is gone; stop() reports what was seen.
    }
  };
  const timer = setInterval(sample, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      sample();
      let hwm = 0;
      let cpu = NaN;
      try {
        hwm = residentMemory(pid).hwm;
        cpu = cpuSeconds(pid) - cpuAtStart;
      } catch {
        exact = false;
      }
      await pending;
      return {
        startBytes,
        peakBytes: exact ? Math.max(hwm, sampledPeakBytes) : sampledPeakBytes,
        sampledPeakBytes,
        exact,
        samples,
        cpuSeconds: cpu,
        ...(atPeak === undefined ? {} : { atPeak }),
      };
    },
  };
}
