import { describe, expect, it } from "vitest";
import type { KubeClient, KubeObject, ResourceType } from "../client/index.ts";
import { addFinalizer, removeFinalizer } from "./finalizers.ts";

const RT = { kind: "Thing" } as ResourceType;

/** A client that records the merge patches it is asked to send and answers with the object they make. */
function recordingClient(stored: KubeObject) {
  const patches: unknown[] = [];
  const client = {
    patch: (_rt: ResourceType, _ns: string | undefined, _name: string, patch: { metadata: KubeObject["metadata"] }) => {
      patches.push(patch);
      const { annotations, ...rest } = patch.metadata;
      const metadata = { ...stored.metadata, ...rest, annotations: { ...stored.metadata.annotations, ...annotations }, resourceVersion: "2" };
      return Promise.resolve({ ...stored, metadata });
    },
  } as unknown as KubeClient;
  return { client, patches };
}

const thing: KubeObject = { apiVersion: "v1", kind: "Thing", metadata: { name: "a", namespace: "ns", resourceVersion: "1", finalizers: ["other/keep"] } };

describe("addFinalizer", () => {
  it("adds a missing finalizer with the object's resourceVersion, keeping the others", async () => {
    const { client, patches } = recordingClient(thing);
    const updated = await addFinalizer(client, RT, thing, "x/f");
    expect(patches).toEqual([{ metadata: { finalizers: ["other/keep", "x/f"], resourceVersion: "1" } }]);
    expect(updated.metadata.finalizers).toEqual(["other/keep", "x/f"]);
  });

  it("sets the annotations in the same single write", async () => {
    const { client, patches } = recordingClient(thing);
    const updated = await addFinalizer(client, RT, thing, "x/f", { "x/claim": "uid-1" });
    expect(patches).toEqual([{ metadata: { finalizers: ["other/keep", "x/f"], resourceVersion: "1", annotations: { "x/claim": "uid-1" } } }]);
    expect(updated.metadata.annotations).toEqual({ "x/claim": "uid-1" });
  });

  it("writes the annotations alone when the finalizer is there, and nothing when both are", async () => {
    const held = { ...thing, metadata: { ...thing.metadata, finalizers: ["x/f"] } };
    const first = recordingClient(held);
    await addFinalizer(first.client, RT, held, "x/f", { "x/claim": "uid-1" });
    expect(first.patches).toEqual([{ metadata: { finalizers: ["x/f"], resourceVersion: "1", annotations: { "x/claim": "uid-1" } } }]);

    const done = { ...held, metadata: { ...held.metadata, annotations: { "x/claim": "uid-1" } } };
    const second = recordingClient(done);
    expect(await addFinalizer(second.client, RT, done, "x/f", { "x/claim": "uid-1" })).toBe(done);
    expect(await addFinalizer(second.client, RT, done, "x/f")).toBe(done);
    expect(second.patches).toEqual([]);
  });
});

describe("removeFinalizer", () => {
  it("removes only its own finalizer, and writes nothing when it is not there", async () => {
    const held = { ...thing, metadata: { ...thing.metadata, finalizers: ["other/keep", "x/f"] } };
    const { client, patches } = recordingClient(held);
    await removeFinalizer(client, RT, held, "x/f");
    expect(await removeFinalizer(client, RT, thing, "x/f")).toBe(thing);
    expect(patches).toEqual([{ metadata: { finalizers: ["other/keep"], resourceVersion: "1" } }]);
  });
});
