// The Manager: owns the inversify container, loads OperatorModules, builds
// their controllers and the cache from what they declare, installs or
// verifies their CRDs, starts the cache, waits for it to sync, runs the
// controllers (only while leading, when leader election is on), serves
// /healthz, /readyz and /metrics, and shuts down gracefully.
import type { KubeConfig } from "@kubernetes/client-node";
import { Container, ContainerModule, type ContainerModuleLoadOptions } from "inversify";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Cache, type InformerOptions } from "../cache/index.ts";
import { KubeClient, builtin, type RequestObservation } from "../client/index.ts";
import type { Controller} from "../controller/index.ts";
import { ControllerBuilder, isOneOf } from "../controller/index.ts";
import { EventRecorder } from "../events/index.ts";
import { MetricsServer, ProbeServer, type BoundAddress } from "../health/index.ts";
import { LeaderElector, LeadershipLostError, type Leadership } from "../leader/index.ts";
import { createLogger, type Logger } from "../log/index.ts";
import { Metrics } from "../metrics/index.ts";
import { BackgroundTasks } from "./background.ts";
import { settledWithin } from "./bounded-wait.ts";
import { installCrashPolicy, type CrashPolicyOptions } from "./crash-policy.ts";
import { ensureCrds, type CrdPolicy } from "./crds.ts";
import { uniqueKinds, type ControllerSetup, type OperatorModule } from "./module.ts";
import { Tokens, systemClock, type ManagerSettings, type SecretAccess } from "./tokens.ts";

export const TARGET_LABEL = "stateward.io/target";

export interface LeaderElectionConfig {
  /** Namespace of the Lease. */
  namespace: string;
  /** Lease name. Defaults to "stateward-manager". */
  name?: string;
  /** Defaults to "<hostname>_<random>". */
  identity?: string;
  /** Defaults to 15 s / 10 s / 2 s, as controller-runtime. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface ManagerOptions {
  kubeConfig: KubeConfig;
  /** Namespaces to watch; empty means cluster-wide. Defaults to []. */
  namespaces?: string[];
  /** Only objects labelled stateward.io/target=<target> are seen (server-side selector). Defaults to none. */
  target?: string;
  /** Lease-based leader election; off when undefined. */
  leaderElection?: LeaderElectionConfig;
  /** /metrics bind address ("0" disables). Defaults to "0" here; the CLI defaults to ":8080". */
  metricsAddr?: string;
  /** /healthz and /readyz bind address ("0" disables). Defaults to "0" here; the CLI defaults to ":8081". */
  healthAddr?: string;
  /** Install the CRDs, or only verify they exist. Defaults to "install". */
  crds?: CrdPolicy;
  /** Upper bound on draining in-flight reconciles at shutdown. Defaults to 30 s (controller-runtime's GracefulShutdownTimeout). */
  gracefulShutdownMs?: number;
  logger?: Logger;
  /** Field manager for writes. Defaults to "stateward". */
  fieldManager?: string;
  /** Called after every API request (tests use it to check what was listed, watched and written). */
  onRequest?: (o: RequestObservation) => void;
  /** Informer tuning (watchdog, backoff); defaults are the informer's. */
  informer?: Omit<InformerOptions, "namespace" | "labelSelector" | "logger">;
  /**
   * How Secrets are accessed. "watch" (the default): Secrets are listed and watched as metadata,
   * so a changed Secret is acted on at once. "get": Secrets are only read by name when a
   * reconcile needs one, never listed or watched — the RBAC can then grant `get` alone (no
   * listing every Secret in scope); a changed Secret is noticed at its referrers' next
   * periodic check instead (documented per kind in the chart README).
   */
  secrets?: SecretAccess;
}

/** Requests counted by verb since the manager was created; tests and benchmarks read it. */
export interface RequestCounts {
  total: number;
  writes: number;
  byVerb: Record<string, number>;
}

const WRITE_VERBS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export class Manager {
  readonly container = new Container({ defaultScope: "Singleton" });
  readonly client: KubeClient;
  readonly cache: Cache;
  readonly metrics = new Metrics();
  readonly logger: Logger;
  readonly requests: RequestCounts = { total: 0, writes: 0, byVerb: {} };
  readonly settings: ManagerSettings;
  readonly background = new BackgroundTasks();
  /** Observed by every reconcile and background task: aborted at once when this manager stops leading. */
  readonly leadership: Leadership;
  private readonly leadershipStopper = new AbortController();
  /** This process's identity: the leader-election identity, also bound as Tokens.Identity. */
  readonly identity: string;
  private readonly opts: ManagerOptions;
  private readonly modules: OperatorModule[] = [];
  /** Each module's ControllerSetups, bound under a token of its own (see load). */
  private readonly setupTokens = new Map<string, symbol>();
  private readonly controllers: Controller[] = [];
  private readonly probes = new ProbeServer();
  private readonly metricsServer: MetricsServer;
  private elector: LeaderElector | undefined;
  private controllersRunning = false;
  private lostLeadership = false;
  private stopping: Promise<void> | undefined;
  /** Every EventRecorder handed to an operator: what they emitted is flushed at stop. */
  private readonly recorders: EventRecorder[] = [];
  private resolveDone!: () => void;
  private rejectDone!: (err: Error) => void;
  /** Settles when the manager has stopped; rejects if it lost leadership or was stopped for an error. */
  readonly done: Promise<void>;
  healthAddress: BoundAddress | undefined;
  metricsAddress: BoundAddress | undefined;

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.logger = opts.logger ?? createLogger();
    this.settings = { namespaces: opts.namespaces ?? [], target: opts.target, targetLabel: TARGET_LABEL, secrets: opts.secrets ?? "watch" };
    this.identity = opts.leaderElection?.identity ?? `${hostname()}_${randomBytes(4).toString("hex")}`;
    const host = (() => {
      try {
        return new URL(opts.kubeConfig.getCurrentCluster()?.server ?? "").host;
      } catch {
        return "";
      }
    })();
    this.client = new KubeClient({
      kubeConfig: opts.kubeConfig,
      fieldManager: opts.fieldManager,
      observe: (o: RequestObservation) => {
        opts.onRequest?.(o);
        this.requests.total++;
        this.requests.byVerb[o.verb] = (this.requests.byVerb[o.verb] ?? 0) + 1;
        if (WRITE_VERBS.has(o.verb)) this.requests.writes++;
        this.metrics.restRequest(o.verb === "LIST" || o.verb === "WATCH" ? "GET" : o.verb, host, o.status || "<error>", o.seconds);
      },
    });
    this.cache = new Cache(this.client, {
      namespaces: this.settings.namespaces,
      targetSelector: opts.target ? `${TARGET_LABEL}=${opts.target}` : undefined,
      informer: opts.informer,
      logger: this.logger.child({ component: "cache" }),
    });
    this.metricsServer = new MetricsServer(() => this.metrics.exposition());
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    this.done.catch(() => undefined);
    this.leadership = {
      signal: this.leadershipStopper.signal,
      previousLeaderFenceMs: () => this.elector?.previousLeaderFenceMs() ?? 0,
    };
    const c = this.container;
    c.bind(Tokens.KubeClient).toConstantValue(this.client);
    c.bind(Tokens.Cache).toConstantValue(this.cache);
    c.bind(Tokens.Logger).toConstantValue(this.logger);
    c.bind(Tokens.Metrics).toConstantValue(this.metrics);
    c.bind(Tokens.Clock).toConstantValue(systemClock);
    c.bind(Tokens.ManagerSettings).toConstantValue(this.settings);
    c.bind(Tokens.BackgroundTasks).toConstantValue(this.background);
    c.bind(Tokens.Identity).toConstantValue(this.identity);
    c.bind(Tokens.Leadership).toConstantValue(this.leadership);
    c.bind(Tokens.EventRecorderFactory).toConstantValue((controller: string) => {
      const recorder = new EventRecorder(this.client, {
        reportingController: `stateward.io/${controller}`,
        onError: (err) => this.logger.warn("could not record event", { controller, err }),
      });
      this.recorders.push(recorder);
      return recorder;
    });
  }

  /**
   * Adds operator modules; their container modules are loaded into the manager's container. A module's
   * ControllerSetups are bound under a token of its own, so that what a controller declares about the
   * cache names its operator.
   */
  load(...modules: OperatorModule[]): this {
    for (const m of modules) {
      if (this.modules.some((x) => x.name === m.name)) continue;
      this.modules.push(m);
      const setups = Symbol(`stateward.core.ControllerSetup of ${m.name}`);
      this.setupTokens.set(m.name, setups);
      this.container.load(
        new ContainerModule((options: ContainerModuleLoadOptions) => {
          const bind: ContainerModuleLoadOptions["bind"] = (id) => options.bind(id === Tokens.ControllerSetup ? setups : id);
          return m.container.load({ ...options, bind });
        }),
      );
    }
    return this;
  }

  get loadedOperators(): string[] {
    return this.modules.map((m) => m.name);
  }

  /**
   * Builds controllers and the cache from every operator's declarations, installs or verifies CRDs,
   * syncs caches, then runs (or campaigns for leadership).
   * @throws Error when two operators (or controllers) declare a kind's cache differently, naming both
   */
  async start(): Promise<void> {
    const log = this.logger;
    const deps = { cache: this.cache, logger: this.logger, metrics: this.metrics, leadership: this.leadership.signal };
    // With --secrets get, nothing lists or watches Secrets: their declarations and watches are left out here, once.
    const unwatched = this.settings.secrets === "get" ? [builtin.secret] : [];
    for (const m of this.modules) {
      for (const { kind, scope } of m.cache ?? []) if (!isOneOf(kind, unwatched)) this.cache.declare(kind, scope, { operator: m.name });
      const token = this.setupTokens.get(m.name)!;
      const setups = this.container.isBound(token) ? this.container.getAll<ControllerSetup>(token) : [];
      for (const setup of setups) setup.setup(new ControllerBuilder(deps, (c) => this.controllers.push(c), m.name, unwatched));
    }
    // Every declaration is in: a conflict stops the start here, before anything is installed or listed.
    this.cache.build();

    const kinds = uniqueKinds(this.modules.flatMap((m) => m.kinds));
    await ensureCrds(this.client, kinds, this.opts.crds ?? "install");

    this.probes.addHealthCheck("ping", () => undefined);
    this.probes.addReadyCheck("informer-sync", () => {
      if (!this.cache.hasSynced()) throw new Error("caches not synced yet");
    });
    this.metrics.readiness(() => this.cache.hasSynced());
    this.healthAddress = await this.probes.start(this.opts.healthAddr ?? "0");
    this.metricsAddress = await this.metricsServer.start(this.opts.metricsAddr ?? "0");

    this.cache.start();
    await this.cache.waitForSync();
    log.info("caches synced", {
      operators: this.loadedOperators,
      namespaces: this.settings.namespaces.length ? this.settings.namespaces : "all",
      target: this.opts.target ?? null,
      secrets: this.settings.secrets,
    });

    const le = this.opts.leaderElection;
    if (!le) {
      this.startControllers();
      return;
    }
    const identity = this.identity;
    const name = le.name ?? "stateward-manager";
    this.elector = new LeaderElector(this.client, {
      namespace: le.namespace,
      name,
      identity,
      leaseDurationMs: le.leaseDurationMs,
      renewDeadlineMs: le.renewDeadlineMs,
      retryPeriodMs: le.retryPeriodMs,
      onStartedLeading: () => {
        log.info("became leader", { lease: `${le.namespace}/${name}`, identity });
        this.metrics.leader(name, true);
        this.startControllers();
      },
      onStoppedLeading: () => {
        // Another manager may take over once the Lease expires: every reconcile and background task
        // is aborted now, before anything else, and the manager stops. `done` then rejects and
        // `stateward run` exits non-zero (as controller-runtime's "leader election lost"), so the
        // Deployment restarts a clean process that campaigns again — nothing half-stopped lingers.
        log.error("lost leadership; stopping", { lease: `${le.namespace}/${name}`, identity });
        this.metrics.leader(name, false);
        this.lostLeadership = true;
        void this.stop(new LeadershipLostError());
      },
      onError: (err) => log.warn("leader election attempt failed", { err }),
    });
    this.elector.start();
  }

  /**
   * Makes an unhandled rejection or uncaught exception stop this manager and
   * exit the process non-zero (see crash-policy.ts), instead of Node's
   * immediate exit. For the process that runs the manager (`stateward run`);
   * returns a function that removes it.
   */
  installCrashPolicy(options: Pick<CrashPolicyOptions, "graceMs" | "exit" | "process"> = {}): () => void {
    return installCrashPolicy({
      ...options,
      logger: this.logger,
      stop: (reason) => this.stop(reason),
      inFlight: () => this.background.list().map((t) => ({ task: t.name, startedAt: t.startedAt.toISOString() })),
    });
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.controllersRunning;
  }

  private startControllers(): void {
    if (this.controllersRunning || this.stopping) return;
    this.controllersRunning = true;
    for (const c of this.controllers) c.start();
  }

  /**
   * Graceful stop: abort and drain in-flight reconciles and background tasks (bounded), release
   * leadership, stop informers and servers. `reason` becomes the abort reason work sees, so an
   * operation records why it stopped.
   */
  stop(reason?: Error): Promise<void> {
    this.stopping ??= (async () => {
      const grace = this.opts.gracefulShutdownMs ?? 30_000;
      // A stop without a reason is the ordinary one (SIGTERM): `done` resolves. With a reason
      // (lost leadership, the crash policy) `done` rejects with it.
      const abortReason = reason ?? new Error("the manager is shutting down");
      this.leadershipStopper.abort(abortReason);
      await Promise.all([...this.controllers.map((c) => c.stop(grace, abortReason)), this.background.stop(grace, abortReason)]);
      // Events emitted in the background are written before the client goes (bounded as the reconciles are).
      await settledWithin(Promise.all(this.recorders.map((r) => r.flush())), grace);
      await this.elector?.stop();
      await this.cache.stop();
      await Promise.all([this.probes.stop(), this.metricsServer.stop()]);
      // Runs the services' deactivation hooks (e.g. closing MySQL connection pools).
      await this.container.unbindAllAsync();
      this.logger.info("manager stopped");
      if (this.lostLeadership) this.rejectDone(new Error("leader election lost"));
      else if (reason) this.rejectDone(reason);
      else this.resolveDone();
    })();
    return this.stopping;
  }
}
