// Every benchmark `make bench` knows, in the order they run. A new one is a
// module exporting a `Benchmark` (see benchmark.ts), added here.
import type { Benchmark } from "./benchmark.ts";
import { coreBenchmark } from "./core.bench.ts";
import { databaseUserBenchmark } from "./database-user.bench.ts";
import { mysqlBackupBenchmark } from "./mysql-backup.bench.ts";
import { mysqlClusterBenchmark } from "./mysql-cluster.bench.ts";
import { pointInTimeBenchmark } from "./point-in-time.bench.ts";

export const benchmarks: readonly Benchmark[] = [coreBenchmark, databaseUserBenchmark, mysqlBackupBenchmark, pointInTimeBenchmark, mysqlClusterBenchmark];
