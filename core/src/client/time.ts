// Times as the Kubernetes API writes them. metav1.Time is RFC 3339 in whole
// seconds: a status or condition time written with milliseconds would differ
// from what the server gives back, and a status that does not compare equal
// to its own reading is written again on every reconcile. MicroTime (Events,
// Leases) has exactly six fractional digits.

/** `2026-12-01T16:31:01Z`: a metav1.Time, for status fields, conditions and annotations. */
export function kubeTime(at: Date = new Date()): string {
  return at.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `2026-12-01T16:31:01.123000Z`: a metav1.MicroTime, for Events and Leases. */
export function kubeMicroTime(at: Date | number): string {
  // toISOString always ends in ".<milliseconds>Z": three more digits make microseconds (no RegExp: finding 37).
  return `${new Date(at).toISOString().slice(0, -1)}000Z`;
}
