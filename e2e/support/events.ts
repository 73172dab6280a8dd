// The Events (events.k8s.io) a test reads to see what an operator said about
// an object: its reasons and notes, oldest first.
import { builtin, type KubeClient, type KubeObject } from "@stateward/core";

export interface KubeEvent extends KubeObject {
  reason?: string;
  /** Normal or Warning. */
  type?: string;
  note?: string;
  eventTime?: string;
  regarding?: { name?: string; uid?: string; kind?: string };
}

/** The Events of a namespace about one object, picked by any of its name, uid and kind; oldest first. */
export async function eventsAbout(client: KubeClient, namespace: string, about: { name?: string; uid?: string; kind?: string }): Promise<KubeEvent[]> {
  const list = await client.list<KubeEvent>(builtin.event, { namespace });
  return list.items
    .filter((e) => (about.name === undefined || e.regarding?.name === about.name) && (about.uid === undefined || e.regarding?.uid === about.uid) && (about.kind === undefined || e.regarding?.kind === about.kind))
    .sort((a, b) => (a.eventTime ?? "").localeCompare(b.eventTime ?? ""));
}
