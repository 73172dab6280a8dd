import { describe, expect, it } from "vitest";
import type { KubeClient, KubeObject } from "../client/index.ts";
import { EventRecorder } from "./recorder.ts";

/** Records the writes the recorder makes; the series logic is what is tested here. */
function fakeClient() {
  const writes: { verb: "create" | "patch"; name: string }[] = [];
  const client = {
    create: (_kind: unknown, obj: KubeObject) => {
      writes.push({ verb: "create", name: obj.metadata.name! });
      return Promise.resolve(obj);
    },
    patch: (_kind: unknown, _ns: string, name: string) => {
      writes.push({ verb: "patch", name });
      return Promise.resolve({});
    },
  } as unknown as KubeClient;
  return { client, writes };
}

const object = (name: string): KubeObject => ({ apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "ns", uid: `uid-${name}` } });

describe("EventRecorder series", () => {
  it("joins a repeat within the window to the series, and starts a new Event after it, with thousands of series at once", async () => {
    let now = 1_000_000;
    const { client, writes } = fakeClient();
    const recorder = new EventRecorder(client, { reportingController: "test", seriesWindowMs: 60_000, repeatIntervalMs: 0, now: () => now });

    // 3,000 objects, one Event each, a millisecond apart.
    for (let i = 0; i < 3_000; i++, now++) await recorder.record(object(`o${i}`), "Normal", "Created", "created");
    expect(writes.filter((w) => w.verb === "create")).toHaveLength(3_000);

    // Within the window: a repeat joins its series (a patch of the same Event).
    writes.length = 0;
    await recorder.record(object("o0"), "Normal", "Created", "created");
    await recorder.record(object("o2999"), "Normal", "Created", "created");
    expect(writes.map((w) => w.verb)).toEqual(["patch", "patch"]);

    // o0's series leaves the window; a repeat is a new Event, whose own series starts then.
    now += 60_000 - 2_999;
    writes.length = 0;
    await recorder.record(object("o0"), "Normal", "Created", "created");
    expect(writes.map((w) => w.verb)).toEqual(["create"]);
    now += 30_000;
    await recorder.record(object("o0"), "Normal", "Created", "created");
    // o2999's series (a minute and a half old) has left the window as well.
    await recorder.record(object("o2999"), "Normal", "Created", "created");
    expect(writes.map((w) => w.verb)).toEqual(["create", "patch", "create"]);
  });

  it("keeps a renewed series after older ones are forgotten", async () => {
    let now = 0;
    const { client, writes } = fakeClient();
    const recorder = new EventRecorder(client, { reportingController: "test", seriesWindowMs: 1_000, repeatIntervalMs: 0, now: () => now });
    await recorder.record(object("a"), "Warning", "Failed", "x");
    await recorder.record(object("b"), "Warning", "Failed", "x");
    now = 1_500; // both left the window: a is renewed (a new Event), b is not
    await recorder.record(object("a"), "Warning", "Failed", "x");
    now = 2_000;
    await recorder.record(object("c"), "Warning", "Failed", "x"); // prunes b
    now = 2_400; // a's new series is 900 ms old: a repeat joins it
    writes.length = 0;
    await recorder.record(object("a"), "Warning", "Failed", "x");
    expect(writes.map((w) => w.verb)).toEqual(["patch"]);
  });
});

describe("EventRecorder.emit", () => {
  it("writes in the background, one at a time in the order emitted, and flush waits for them", async () => {
    const writes: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const client = {
      create: async (_kind: unknown, obj: KubeObject & { reason?: string }) => {
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        await new Promise((r) => setTimeout(r, 2));
        writes.push(obj.reason!);
        inFlight--;
        return obj;
      },
    } as unknown as KubeClient;
    const recorder = new EventRecorder(client, { reportingController: "test" });
    for (let i = 0; i < 5; i++) recorder.emit(object(`o${i}`), "Normal", `Step${i}`, "note");
    expect(writes).toEqual([]); // nothing waited for
    await recorder.flush();
    expect(writes).toEqual(["Step0", "Step1", "Step2", "Step3", "Step4"]);
    expect(maxInFlight).toBe(1);
  });

  it("drops what is emitted while 1,000 events wait, and says so", async () => {
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    let created = 0;
    const client = {
      create: async (_kind: unknown, obj: KubeObject) => {
        await stuck;
        created++;
        return obj;
      },
    } as unknown as KubeClient;
    const errors: string[] = [];
    const recorder = new EventRecorder(client, { reportingController: "test", onError: (err) => errors.push((err as Error).message) });
    for (let i = 0; i < 1_005; i++) recorder.emit(object(`o${i}`), "Normal", "Created", "created");
    expect(errors).toHaveLength(5);
    expect(errors[0]).toMatch(/Created dropped: 1000 events are waiting/);
    release();
    await recorder.flush();
    expect(created).toBe(1_000);
    // Once written, there is room again.
    recorder.emit(object("late"), "Normal", "Created", "created");
    await recorder.flush();
    expect(created).toBe(1_001);
  });
});
