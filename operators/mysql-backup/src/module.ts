// The mysql-backup operator as an OperatorModule: MySQLBackup and
// MySQLRestore controllers sharing the MySQL services with the other MySQL
// operators, and a bound on concurrent operations per manager.
import {
  Tokens,
  cacheKind,
  bindResolved,
  token,
  type KubeObject,
  type OperatorModule,
} from "@stateward/core";
import {
  MySQLInstanceKind,
  bindInstanceController,
  bindMySQLServices,
  instanceControllerCache,
  mysqlControllerDeps,
} from "@stateward/mysql";
import { ContainerModule } from "inversify";
import { MySQLBackupKind, MySQLBackupScheduleKind, MySQLBinlogArchiveKind, MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "./api.ts";
import { BackupReconciler } from "./controllers/backup-reconciler.ts";
import { BinlogArchiveReconciler } from "./controllers/binlog-archive-reconciler.ts";
import { RESTORE_BY_BACKUP, restoreBackupRef, restoresWaitingFor } from "./controllers/restore-index.ts";
import { RestoreReconciler } from "./controllers/restore-reconciler.ts";
import { ScheduleMetrics } from "./controllers/metrics.ts";
import { SCHEDULE_LABEL, ScheduleReconciler } from "./controllers/schedule-reconciler.ts";
import { OperationSlots } from "./controllers/slots.ts";

export interface MySQLBackupOperatorOptions {
  /** Backups and restores running at once in one manager. Defaults to 2: each compresses on a core. */
  maxConcurrentOperations?: number;
}

const SlotsToken = token<OperationSlots>("stateward.mysql-backup.OperationSlots");

export function createMySQLBackupOperator(options: MySQLBackupOperatorOptions = {}): OperatorModule {
  return {
    name: "mysql-backup",
    // MySQLInstance is shared by the MySQL operators (@stateward/mysql); listed here so a
    // manager running only this operator installs (or verifies) its CRD and keeps its status.
    kinds: [MySQLBackupKind, MySQLRestoreKind, MySQLBackupScheduleKind, MySQLBinlogArchiveKind, MySQLInstanceKind],
    // Backups and restores read the MySQLInstance they name; restores read MySQLBackups, schedules own them.
    cache: [...instanceControllerCache, cacheKind(MySQLBackupKind.resource, { target: true })],
    container: new ContainerModule((container) => {
      bindMySQLServices(container);
      bindInstanceController(container);
      const { bind } = container;
      bind<OperationSlots>(SlotsToken).toConstantValue(new OperationSlots(options.maxConcurrentOperations ?? 2));
      // What backups and restores take; both also take the manager's Leadership: both remove what an interrupted run wrote.
      const operationDeps = { ...mysqlControllerDeps, tasks: Tokens.BackgroundTasks, slots: SlotsToken, identity: Tokens.Identity, leadership: Tokens.Leadership, metrics: Tokens.Metrics };
      bindResolved(bind, Tokens.ControllerSetup, operationDeps, ({ events, ...deps }) => ({
        setup: (builder) => {
          builder
            .named("mysqlbackup")
            .for(MySQLBackupKind.resource)
            .withOptions({ maxConcurrentReconciles: 2 })
            .complete(new BackupReconciler({ ...deps, events: events("mysqlbackup") }));
        },
      }));
      bindResolved(bind, Tokens.ControllerSetup, operationDeps, ({ events, ...deps }) => ({
        setup: (builder) => {
          builder
            .named("mysqlrestore")
            .for(MySQLRestoreKind.resource)
            // A restore waiting for its backup starts when the backup completes: woken by it, not polled.
            .watches<MySQLBackup>(MySQLBackupKind.resource, (backup) => restoresWaitingFor(deps.cache, backup))
            .complete(new RestoreReconciler({ ...deps, events: events("mysqlrestore") }));
          // After complete(): the kind is registered with the target selector by then.
          deps.cache.addIndexer<MySQLRestore>(MySQLRestoreKind.resource, RESTORE_BY_BACKUP, restoreBackupRef);
        },
      }));
      // An archive's stream runs as a background task beside the reconciles (BackgroundTasks: stopped on shutdown and on leadership loss).
      const archiveDeps = { ...mysqlControllerDeps, tasks: Tokens.BackgroundTasks, metrics: Tokens.Metrics, leadership: Tokens.Leadership };
      bindResolved(bind, Tokens.ControllerSetup, archiveDeps, ({ events, ...deps }) => ({
        setup: (builder) => {
          builder
            .named("mysqlbinlogarchive")
            .for(MySQLBinlogArchiveKind.resource)
            .complete(new BinlogArchiveReconciler({ ...deps, events: events("mysqlbinlogarchive") }));
        },
      }));
      const scheduleDeps = { client: Tokens.KubeClient, cache: Tokens.Cache, events: Tokens.EventRecorderFactory, clock: Tokens.Clock, metrics: Tokens.Metrics };
      bindResolved(bind, Tokens.ControllerSetup, scheduleDeps, ({ client, cache, events, clock, metrics }) => ({
        setup: (builder) => {
          builder
            .named("mysqlbackupschedule")
            .for(MySQLBackupScheduleKind.resource)
            // Its backups by label (they are not owned: deleting a schedule keeps them).
            .watches(MySQLBackupKind.resource, (b: KubeObject) => {
              const schedule = b.metadata.labels?.[SCHEDULE_LABEL];
              return schedule ? [{ namespace: b.metadata.namespace, name: schedule }] : [];
            })
            .complete(new ScheduleReconciler({ client, cache, events: events("mysqlbackupschedule"), clock, metrics: new ScheduleMetrics(metrics) }));
        },
      }));
    }),
  };
}

export const mysqlBackupOperator: OperatorModule = createMySQLBackupOperator();
