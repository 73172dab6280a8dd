import { describe, expect, it } from "vitest";
import { compareQuantity, quantityValue } from "./quantity.ts";

describe("quantities", () => {
  it("compares quantities", () => {
    expect(compareQuantity("1Gi", "1024Mi")).toBe(0);
    expect(compareQuantity("1G", "1Gi")).toBeLessThan(0);
    expect(compareQuantity("20Gi", "10Gi")).toBeGreaterThan(0);
  });

  it("reads a size in bytes, and says NaN to what is not a quantity", () => {
    expect(quantityValue("4Gi")).toBe(4 * 2 ** 30);
    expect(quantityValue("64Mi")).toBe(64 * 2 ** 20);
    expect(quantityValue("500M")).toBe(500e6);
    expect(quantityValue("1024")).toBe(1024);
    expect(quantityValue("lots")).toBeNaN();
  });
});
