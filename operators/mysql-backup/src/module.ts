// The mysql-backup operator as an OperatorModule: MySQLBackup and
// MySQLRestore controllers sharing the MySQL services with the other MySQL
// operators, and a bound on concurrent operations per manager.
import {
  Tokens,
  cacheKind,
  type BackgroundTasks,
  type Cache,
  type Clock,
  type ControllerSetup,
  type EventRecorder,
  type KubeClient,
  type Leadership,
  type ManagerSettings,
  type OperatorModule,
} from "@stateward/core";
import {
  MySQLInstanceKind,
  MySQLTokens,
  bindInstanceController,
  bindMySQLServices,
  instanceControllerCache,
  type MySQLConnector,
  type SecretReader,
} from "@stateward/mysql";
import { ContainerModule } from "inversify";
import { MySQLBackupKind, MySQLBackupScheduleKind, MySQLRestoreKind, type MySQLBackup, type MySQLRestore } from "./api.ts";
import { BackupReconciler } from "./controllers/backup-reconciler.ts";
import { RESTORE_BY_BACKUP, restoreBackupRef, restoresWaitingFor } from "./controllers/restore-index.ts";
import { RestoreReconciler } from "./controllers/restore-reconciler.ts";
import { ScheduleReconciler } from "./controllers/schedule-reconciler.ts";
import { OperationSlots } from "./controllers/slots.ts";

export interface MySQLBackupOperatorOptions {
  /** Backups and restores running at once in one manager. Defaults to 2: each compresses on a core. */
  maxConcurrentOperations?: number;
}

const SlotsToken = Symbol.for("stateward.mysql-backup.OperationSlots");

export function createMySQLBackupOperator(options: MySQLBackupOperatorOptions = {}): OperatorModule {
  return {
    name: "mysql-backup",
    // MySQLInstance is shared by the MySQL operators (@stateward/mysql); listed here so a
    // manager running only this operator installs (or verifies) its CRD and keeps its status.
    kinds: [MySQLBackupKind, MySQLRestoreKind, MySQLBackupScheduleKind, MySQLInstanceKind],
    // Backups and restores read the MySQLInstance they name; restores read MySQLBackups, schedules own them.
    cache: [...instanceControllerCache, cacheKind(MySQLBackupKind.resource, { target: true })],
    container: new ContainerModule((container) => {
      bindMySQLServices(container);
      bindInstanceController(container);
      const { bind } = container;
      bind<OperationSlots>(SlotsToken).toConstantValue(new OperationSlots(options.maxConcurrentOperations ?? 2));
      const deps: [symbol, symbol, symbol, symbol, symbol, symbol, symbol, symbol, symbol] = [
        Tokens.KubeClient, Tokens.Cache, Tokens.EventRecorderFactory, Tokens.BackgroundTasks, SlotsToken,
        MySQLTokens.Connector, MySQLTokens.SecretReader, Tokens.Identity, Tokens.ManagerSettings,
      ];
      type Factory = (
        client: KubeClient, cache: Cache, events: (name: string) => EventRecorder, tasks: BackgroundTasks, slots: OperationSlots,
        connector: MySQLConnector, secrets: SecretReader, identity: string, settings: ManagerSettings,
      ) => ControllerSetup;
      // Backups and restores also take the manager's Leadership: both remove what an interrupted run wrote.
      const backup = (leadership: Leadership, ...[client, cache, events, tasks, slots, connector, secrets, identity]: Parameters<Factory>): ControllerSetup => ({
        setup: (builder) => {
          builder
            .named("mysqlbackup")
            .for(MySQLBackupKind.resource)
            .withOptions({ maxConcurrentReconciles: 2 })
            .complete(new BackupReconciler({ client, cache, events: events("mysqlbackup"), tasks, slots, connector, secrets, identity, leadership }));
        },
      });
      const restore = (leadership: Leadership, ...[client, cache, events, tasks, slots, connector, secrets, identity]: Parameters<Factory>): ControllerSetup => ({
        setup: (builder) => {
          builder
            .named("mysqlrestore")
            .for(MySQLRestoreKind.resource)
            // A restore waiting for its backup starts when the backup completes: woken by it, not polled.
            .watches<MySQLBackup>(MySQLBackupKind.resource, (backup) => restoresWaitingFor(cache, backup))
            .complete(new RestoreReconciler({ client, cache, events: events("mysqlrestore"), tasks, slots, connector, secrets, identity, leadership }));
          // After complete(): the kind is registered with the target selector by then.
          cache.addIndexer<MySQLRestore>(MySQLRestoreKind.resource, RESTORE_BY_BACKUP, restoreBackupRef);
        },
      });
      bind<ControllerSetup>(Tokens.ControllerSetup).toResolvedValue(backup, [Tokens.Leadership, ...deps]);
      bind<ControllerSetup>(Tokens.ControllerSetup).toResolvedValue(restore, [Tokens.Leadership, ...deps]);
      bind<ControllerSetup>(Tokens.ControllerSetup).toResolvedValue(
        (client: KubeClient, cache: Cache, events: (name: string) => EventRecorder, clock: Clock) => ({
          setup: (builder) => {
            builder
              .named("mysqlbackupschedule")
              .for(MySQLBackupScheduleKind.resource)
              .owns(MySQLBackupKind.resource)
              .complete(new ScheduleReconciler({ client, cache, events: events("mysqlbackupschedule"), clock }));
          },
        }),
        [Tokens.KubeClient, Tokens.Cache, Tokens.EventRecorderFactory, Tokens.Clock],
      );
    }),
  };
}

export const mysqlBackupOperator: OperatorModule = createMySQLBackupOperator();
