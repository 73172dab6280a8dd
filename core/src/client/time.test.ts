import { describe, expect, it } from "vitest";
import { kubeMicroTime, kubeTime } from "./time.ts";

describe("kubeTime", () => {
  it("writes whole seconds, as the API server returns a metav1.Time", () => {
    expect(kubeTime(new Date("2026-12-01T16:31:01.987Z"))).toBe("2026-12-01T16:31:01Z");
  });
});

describe("kubeMicroTime", () => {
  it("writes six fractional digits, from a Date or epoch milliseconds", () => {
    expect(kubeMicroTime(new Date("2026-12-01T16:31:01.987Z"))).toBe("2026-12-01T16:31:01.987000Z");
    expect(kubeMicroTime(Date.parse("2026-12-01T16:31:01.005Z"))).toBe("2026-12-01T16:31:01.005000Z");
  });
});
