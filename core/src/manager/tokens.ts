// Injection tokens of the core services. Services are injected by token
// (never by type: TypeScript 7 emits no decorator metadata), so a test can
// rebind any of them — the clock, the client, a MySQL connector — without
// touching the operator.
export const Tokens = {
  /** KubeClient: writes to the API server. */
  KubeClient: Symbol.for("stateward.core.KubeClient"),
  /** Cache: reads (informer stores). */
  Cache: Symbol.for("stateward.core.Cache"),
  /** Logger: the manager's root logger. */
  Logger: Symbol.for("stateward.core.Logger"),
  /** Metrics: the manager's Prometheus registry. */
  Metrics: Symbol.for("stateward.core.Metrics"),
  /** Clock: `{ now(): Date }`, rebound by tests to control time. */
  Clock: Symbol.for("stateward.core.Clock"),
  /** EventRecorderFactory: `(controllerName) => EventRecorder`. */
  EventRecorderFactory: Symbol.for("stateward.core.EventRecorderFactory"),
  /** ManagerSettings: the resolved manager options operators may read (namespaces, target). */
  ManagerSettings: Symbol.for("stateward.core.ManagerSettings"),
  /** BackgroundTasks: long-running work started by reconcilers, aborted and awaited at shutdown. */
  BackgroundTasks: Symbol.for("stateward.core.BackgroundTasks"),
  /** Identity: this manager instance's name (`<hostname>_<random>`), e.g. to recognise work a previous process left Running. */
  Identity: Symbol.for("stateward.core.Identity"),
  /** Leadership: a signal aborted when this manager stops leading, and the fence before taking over work a previous leader left Running. */
  Leadership: Symbol.for("stateward.core.Leadership"),
  /**
   * ControllerSetup (multi-bound): one per controller an operator runs, bound in the operator's
   * ContainerModule (the manager keeps each module's apart, to name the operator in a cache conflict).
   */
  ControllerSetup: Symbol.for("stateward.core.ControllerSetup"),
} as const;

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** What operators may know about how the manager is scoped. */
export interface ManagerSettings {
  namespaces: string[];
  target: string | undefined;
  /** The label operators put on objects they create for a target: `stateward.io/target`. */
  targetLabel: string;
  /** "watch": Secrets are listed and watched (as metadata); "get": only read by name (see ManagerOptions.secrets). */
  secrets: SecretAccess;
}

/** How the manager may access Secrets: list and watch them, or only get one by name. */
export type SecretAccess = "watch" | "get";
