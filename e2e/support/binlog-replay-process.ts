// A binlog replay alone in a process of its own (`node binlog-replay-process.ts`), for tests that
// measure it under a memory cgroup: the job comes as JSON in REPLAY_JOB, the result goes to
// stdout as one JSON line.
import { MySQLSession, replayBinlog } from "@stateward/operator-mysql-backup";

interface ReplayJob {
  target: { host: string; port: number; user: string; password: string };
  files: string[];
  after: string;
  untilGtid: string;
}

const job = JSON.parse(process.env.REPLAY_JOB ?? "{}") as ReplayJob;
const session = await MySQLSession.open(job.target, { charset: "binary" });
try {
  const started = Date.now();
  const result = await replayBinlog(session, job.files, { after: job.after, until: { gtid: job.untilGtid } });
  process.stdout.write(`${JSON.stringify({ ...result, seconds: (Date.now() - started) / 1000, peakRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
} finally {
  await session.close();
}
