// Injection tokens of the core services. Services are injected by token
// (never by type: TypeScript 7 emits no decorator metadata), so a test can
// rebind any of them — the clock, the client, a MySQL connector — without
// touching the operator. A token carries the type of what it is bound to, and
// `resolve` injects dependencies by name, not by position: a factory cannot
// receive the cache where it expects the client.
import type { BackgroundTasks } from "./background.ts";
import type { Cache } from "../cache/index.ts";
import type { KubeClient } from "../client/index.ts";
import type { EventRecorder } from "../events/index.ts";
import type { Leadership } from "../leader/index.ts";
import type { Logger } from "../log/index.ts";
import type { Metrics } from "../metrics/index.ts";
import type { Bind, BindInWhenOnFluentSyntax } from "inversify";
import type { ControllerSetup } from "./module.ts";

declare const boundType: unique symbol;

/** An injection token whose binding is a `T`: a `Symbol.for` key, typed. */
export type Token<T> = symbol & { readonly [boundType]?: T };

/** The token of `key` (a `Symbol.for` key, so two copies of a package agree on it), bound to a `T`. */
export function token<T>(key: string): Token<T> {
  return Symbol.for(key);
}

/** What each token of `tokens` is bound to, under the same names. */
export type Resolved<D extends Record<string, Token<unknown>>> = { [K in keyof D]: D[K] extends Token<infer T> ? T : never };

/**
 * Arguments for inversify's `toResolvedValue`: `factory` receives an object
 * of the named dependencies, each resolved from its token.
 *
 *   bind(MyToken).toResolvedValue(...resolve({ client: Tokens.KubeClient, cache: Tokens.Cache }, ({ client, cache }) => ...))
 */
export function resolve<D extends Record<string, Token<unknown>>, R>(tokens: D, factory: (deps: Resolved<D>) => R): [(...values: unknown[]) => R, symbol[]] {
  const names = Object.keys(tokens) as (keyof D & string)[];
  return [(...values) => factory(Object.fromEntries(names.map((name, i) => [name, values[i]])) as Resolved<D>), names.map((name) => tokens[name] as symbol)];
}

/**
 * Binds `token` to what `factory` makes of the named dependencies, typed by
 * the token (so the factory's result is checked, and a ControllerSetup's
 * builder is typed):
 *
 *   bindResolved(bind, Tokens.ControllerSetup, { client: Tokens.KubeClient, cache: Tokens.Cache }, ({ client, cache }) => ({ setup: (builder) => ... }))
 */
export function bindResolved<T, D extends Record<string, Token<unknown>>>(bind: Bind, token: Token<T>, deps: D, factory: (deps: Resolved<D>) => T): BindInWhenOnFluentSyntax<T> {
  return bind<T>(token).toResolvedValue(...resolve(deps, factory));
}

export const Tokens = {
  /** KubeClient: writes to the API server. */
  KubeClient: token<KubeClient>("stateward.core.KubeClient"),
  /** Cache: reads (informer stores). */
  Cache: token<Cache>("stateward.core.Cache"),
  /** Logger: the manager's root logger. */
  Logger: token<Logger>("stateward.core.Logger"),
  /** Metrics: the manager's Prometheus registry. */
  Metrics: token<Metrics>("stateward.core.Metrics"),
  /** Clock: `{ now(): Date }`, rebound by tests to control time. */
  Clock: token<Clock>("stateward.core.Clock"),
  /** EventRecorderFactory: `(controllerName) => EventRecorder`. */
  EventRecorderFactory: token<(controllerName: string) => EventRecorder>("stateward.core.EventRecorderFactory"),
  /** ManagerSettings: the resolved manager options operators may read (namespaces, target). */
  ManagerSettings: token<ManagerSettings>("stateward.core.ManagerSettings"),
  /** BackgroundTasks: long-running work started by reconcilers, aborted and awaited at shutdown. */
  BackgroundTasks: token<BackgroundTasks>("stateward.core.BackgroundTasks"),
  /** Identity: this manager instance's name (`<hostname>_<random>`), e.g. to recognise work a previous process left Running. */
  Identity: token<string>("stateward.core.Identity"),
  /** Leadership: a signal aborted when this manager stops leading, and the fence before taking over work a previous leader left Running. */
  Leadership: token<Leadership>("stateward.core.Leadership"),
  /**
   * ControllerSetup (multi-bound): one per controller an operator runs, bound in the operator's
   * ContainerModule (the manager keeps each module's apart, to name the operator in a cache conflict).
   */
  ControllerSetup: token<ControllerSetup>("stateward.core.ControllerSetup"),
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
