// The plug-in contract: an operator is an OperatorModule — a name, the kinds
// (CRDs) it owns, how it needs the kinds it reads cached, and an inversify
// ContainerModule that binds its services and one or more ControllerSetups
// under Tokens.ControllerSetup.
import type { ContainerModule } from "inversify";
import type { CacheDeclaration } from "../cache/index.ts";
import type { ResourceType } from "../client/index.ts";
import type { ControllerBuilder } from "../controller/index.ts";
import type { CrdManifest } from "../crd/index.ts";

/** What the manager needs of a kind defined with core/crd's defineKind. */
export interface CustomKind {
  apiVersion: string;
  kind: string;
  plural: string;
  scope: "Namespaced" | "Cluster";
  /** `<plural>.<group>`. */
  crdName: string;
  /** The CRD in wire form (what the API server and YAML files take). */
  crdManifest(): CrdManifest;
}

export function resourceOf(kind: CustomKind): ResourceType {
  return { apiVersion: kind.apiVersion, kind: kind.kind, plural: kind.plural, namespaced: kind.scope === "Namespaced" };
}

export interface OperatorModule {
  /** As given to `--operators`, e.g. "database-user". */
  name: string;
  /** The kinds whose CRDs this operator owns. */
  kinds: CustomKind[];
  /**
   * How the kinds the operator reads are cached (cacheKind(kind, scope)): label selector, metadata
   * only, indexers. The manager merges every operator's declarations before it builds the cache; two
   * operators declaring a kind differently stop it at start-up. A kind the operator only owns or
   * watches without declaring it is cached whole, and a controller's for() declares its primary kind
   * for the manager's target. Defaults to none.
   */
  cache?: CacheDeclaration[];
  /** Binds the operator's services and its ControllerSetups. */
  container: ContainerModule;
}

/**
 * Builds one controller. Bound by operator modules under
 * Tokens.ControllerSetup (several per module allowed); the manager calls
 * `setup` with a fresh builder once the container is complete, and builds the
 * cache only after every setup ran.
 */
export interface ControllerSetup {
  setup(builder: ControllerBuilder): void;
}

/** Kinds of several modules without duplicates (two operators may both list a kind they read, like MySQLInstance). */
export function uniqueKinds<K extends CustomKind>(kinds: readonly K[]): K[] {
  const seen = new Map<string, K>();
  for (const k of kinds) if (!seen.has(k.crdName)) seen.set(k.crdName, k);
  return [...seen.values()];
}
