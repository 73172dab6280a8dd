import { Tokens, createLogger, type ControllerSetup } from "@stateward/core";
import { Container, ContainerModule } from "inversify";
import { describe, expect, it } from "vitest";
import { bindInstanceController } from "./instance-controller.ts";
import { bindMySQLServices } from "./services.ts";

describe("bindInstanceController", () => {
  it("binds once: three MySQL operator modules give the manager one MySQLInstance controller", () => {
    const container = new Container({ defaultScope: "Singleton" });
    for (const token of [Tokens.KubeClient, Tokens.Cache, Tokens.ManagerSettings]) container.bind(token).toConstantValue({});
    container.bind(Tokens.EventRecorderFactory).toConstantValue(() => ({}));
    container.bind(Tokens.Logger).toConstantValue(createLogger({ level: "error" }));
    const operator = () =>
      new ContainerModule((options) => {
        bindMySQLServices(options);
        bindInstanceController(options);
      });
    container.load(operator(), operator(), operator());
    expect(container.getAll<ControllerSetup>(Tokens.ControllerSetup)).toHaveLength(1);
  });
});
