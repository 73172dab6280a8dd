import { describe, expect, it } from "vitest";
import { messageOf } from "./message.ts";

describe("messageOf", () => {
  it("gives an Error's message without its name or stack", () => {
    expect(messageOf(new TypeError("the key is not a string"))).toBe("the key is not a string");
  });

  it("gives the string form of a value that is not an Error", () => {
    expect(messageOf("connection reset")).toBe("connection reset");
    expect(messageOf(42)).toBe("42");
    expect(messageOf(undefined)).toBe("undefined");
  });
});
