import { describe, expect, it } from "vitest";
import { ApiError, type KubeClient, type KubeObject, type ResourceType } from "../client/index.ts";
import type { Condition } from "./conditions.ts";
import { readyStatus, writeStatus } from "./write-status.ts";

interface Thing extends KubeObject {
  status?: { observedGeneration?: number; conditions?: Condition[]; count?: number; note?: string };
}

const RT = { kind: "Thing" } as ResourceType;
const conflict = () => new ApiError(409, "Conflict", "the object has been modified");

/** An API server holding one object: updates fail with 409 while `conflicts` lasts, or when the resourceVersion is stale. */
function fakeServer(stored: Thing, conflicts = 0) {
  let live = structuredClone(stored);
  const calls = { gets: 0, updates: 0 };
  const client = {
    get: () => {
      calls.gets++;
      return Promise.resolve(structuredClone(live));
    },
    updateStatus: (_rt: ResourceType, obj: Thing) => {
      calls.updates++;
      if (conflicts > 0) {
        conflicts--;
        live = { ...live, metadata: { ...live.metadata, resourceVersion: String(Number(live.metadata.resourceVersion) + 1) } };
        return Promise.reject(conflict());
      }
      if (obj.metadata.resourceVersion !== live.metadata.resourceVersion) return Promise.reject(conflict());
      live = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata.resourceVersion) + 1) } };
      return Promise.resolve(structuredClone(live));
    },
  } as unknown as KubeClient;
  return { client, calls, live: () => live };
}

const thing: Thing = { apiVersion: "v1", kind: "Thing", metadata: { name: "a", namespace: "ns", generation: 3, resourceVersion: "1" } };

describe("writeStatus", () => {
  it("writes nothing when the mutation leaves the status as it is", async () => {
    const stored = { ...thing, status: { count: 1 } };
    const server = fakeServer(stored);
    expect(await writeStatus(server.client, RT, stored, (o) => ({ ...o.status, count: 1, note: undefined }))).toBe(stored);
    expect(server.calls.updates).toBe(0);
  });

  it("lets a conflict fail the write by default", async () => {
    const server = fakeServer(thing, 1);
    await expect(writeStatus(server.client, RT, thing, () => ({ count: 1 }))).rejects.toMatchObject({ status: 409 });
    expect(server.calls.gets).toBe(0);
  });

  it("re-reads on conflict and applies the mutation again to the fresh object", async () => {
    const server = fakeServer(thing, 2);
    const written = await writeStatus(server.client, RT, thing, (o) => ({ ...o.status, count: (o.status?.count ?? 0) + 1 }), { attempts: 3 });
    expect(written.status).toEqual({ count: 1 });
    expect(server.calls).toEqual({ gets: 2, updates: 3 });
  });

  it("gives up after its attempts, naming the object", async () => {
    const server = fakeServer(thing, 5);
    await expect(writeStatus(server.client, RT, thing, () => ({ count: 1 }), { attempts: 2 })).rejects.toThrow(
      "could not write the status of Thing ns/a: it kept changing (2 conflicts)",
    );
  });
});

describe("readyStatus", () => {
  it("merges the fields and sets Ready and the other conditions for the object's generation", () => {
    const status = readyStatus<Thing>({ count: 2 }, { status: "False", reason: "Waiting", message: "waiting" }, [
      { type: "Degraded", status: "True", reason: "Lag", message: "behind" },
    ])({ ...thing, status: { note: "kept" } });
    expect(status).toMatchObject({ note: "kept", count: 2, observedGeneration: 3 });
    expect(status.conditions?.map((c) => [c.type, c.status, c.observedGeneration])).toEqual([
      ["Ready", "False", 3],
      ["Degraded", "True", 3],
    ]);
  });
});
