import { Container } from "inversify";
import { describe, expect, it } from "vitest";
import { bindResolved, resolve, token } from "./tokens.ts";

describe("resolve", () => {
  it("injects dependencies by name, whatever order they are listed in", () => {
    const Greeting = token<string>("stateward.test.Greeting");
    const Count = token<number>("stateward.test.Count");
    const Sentence = token<string>("stateward.test.Sentence");
    const c = new Container();
    c.bind(Greeting).toConstantValue("hello");
    c.bind(Count).toConstantValue(3);
    c.bind(Sentence).toResolvedValue(...resolve({ count: Count, greeting: Greeting }, ({ greeting, count }) => `${greeting} x${count}`));
    expect(c.get(Sentence)).toBe("hello x3");
  });

  it("binds a token to what its factory makes of the named dependencies", () => {
    const Count = token<number>("stateward.test.Count");
    const Doubled = token<number>("stateward.test.Doubled");
    const c = new Container();
    c.bind(Count).toConstantValue(21);
    bindResolved(c.bind.bind(c), Doubled, { count: Count }, ({ count }) => count * 2).inSingletonScope();
    expect(c.get(Doubled)).toBe(42);
  });

  it("gives the same symbol for the same key", () => {
    expect(token<string>("stateward.test.Same")).toBe(Symbol.for("stateward.test.Same"));
  });
});
