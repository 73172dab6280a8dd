import { Tokens, createLogger } from "@stateward/core";
import { Container, ContainerModule } from "inversify";
import { describe, expect, it } from "vitest";
import { MySQLConnector } from "./connector.ts";
import { MySQLTokens, bindMySQLServices } from "./services.ts";

describe("bindMySQLServices", () => {
  it("binds once: two operator modules share one connector (one pool per instance in the process)", async () => {
    const container = new Container({ defaultScope: "Singleton" });
    container.bind(Tokens.KubeClient).toConstantValue({});
    container.bind(Tokens.Cache).toConstantValue({});
    container.bind(Tokens.Logger).toConstantValue(createLogger({ level: "error" }));
    const module = () => new ContainerModule((options) => bindMySQLServices(options));
    container.load(module(), module());
    const a = container.get<MySQLConnector>(MySQLTokens.Connector);
    const b = container.get<MySQLConnector>(MySQLTokens.Connector);
    expect(a).toBeInstanceOf(MySQLConnector);
    expect(b).toBe(a);
    expect(container.getAll(MySQLTokens.Connector)).toHaveLength(1);
    await a.close();
  });
});
