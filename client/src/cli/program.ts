/**
 * The `fuxi` command line: commander wiring and the commands. I/O, the client and the file reader
 * come in as `CliDeps` so that tests can run every command in process; `main.ts` supplies the real
 * ones. `runCli` never throws and never exits: it returns the exit code.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { Command, Option } from 'commander';
import { FUXI_VERSION, FuxiError, InvalidArgumentError } from '@fuxi/common';
import type { JobInfo__Output, NodeStatus__Output } from '@fuxi/proto';
import type { FuxiClient, LogOptions, SubmitResult } from '../sdk/fuxi-client.js';
import { defaultMasters, splitAddresses } from '../sdk/masters.js';
import { JOB_STATE_NAMES, parseJobState, type JobStateName } from '../sdk/job-state.js';
import { errorLine, EXIT, EXIT_CODES_HELP, exitCodeFor, isCommanderError } from './exit-codes.js';
import {
  finalLine,
  fmtTime,
  fmtWindow,
  formatArrayStatus,
  formatClusterStatus,
  formatJobList,
  formatJobStatus,
  formatNodes,
  formatTestbeds,
  toJson,
} from './format.js';
import type { ProgressStream } from './progress.js';

/** The part of `FuxiClient` the CLI uses (tests pass a fake). */
export type CliClient = Pick<
  FuxiClient,
  | 'submit'
  | 'submitMany'
  | 'submitArray'
  | 'get'
  | 'list'
  | 'listPage'
  | 'kill'
  | 'waitFor'
  | 'waitAll'
  | 'nodes'
  | 'cordon'
  | 'uncordon'
  | 'drain'
  | 'createTestbed'
  | 'testbeds'
  | 'deleteTestbed'
  | 'logs'
  | 'fetchOutput'
  | 'clusterStatus'
  | 'close'
>;

const ENDED = new Set<string>(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);
const isEnded = (j: JobInfo__Output) => ENDED.has(j.state);

/** The members of job array `id`, or undefined when `id` names a job (or nothing) rather than an array. */
async function arrayMembers(c: CliClient, id: string): Promise<JobInfo__Output[] | undefined> {
  const members = await c.list({ arrayId: id });
  return members.length > 0 ? members : undefined;
}

/** `call` on a job; when no job has the id but a job array does, the array's members instead. */
async function orArray(call: () => Promise<JobInfo__Output>, c: CliClient, id: string): Promise<JobInfo__Output | JobInfo__Output[]> {
  try {
    return await call();
  } catch (e) {
    if (!(e instanceof FuxiError && e.code === 'NOT_FOUND')) throw e;
    const members = await arrayMembers(c, id);
    if (!members) throw e;
    return members;
  }
}

/** Splits ids into job array ids and job ids. */
async function splitArrays(c: CliClient, ids: readonly string[]): Promise<{ jobIds: string[]; arrayIds: string[] }> {
  const jobIds: string[] = [];
  const arrayIds: string[] = [];
  for (const id of ids) ((await arrayMembers(c, id)) ? arrayIds : jobIds).push(id);
  return { jobIds, arrayIds };
}

export interface CliOutput extends ProgressStream {
  write(chunk: string | Uint8Array): unknown;
}

export interface CliDeps {
  /** May load the client lazily: `fuxi --help` and usage errors never need gRPC. */
  makeClient(masters: string[], transport?: CliTransport, auth?: { tokenFile?: string }): CliClient | Promise<CliClient>;
  stdout: CliOutput;
  stderr: CliOutput;
  /** Reads a file the command names (relative to `cwd`). */
  readFile(path: string): string;
  /** The folder relative paths are in; default the process's (a CLI server runs its callers'). */
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Writes a log chunk to stdout, resolving when it may write more (backpressure). */
  writeRaw?(chunk: Buffer): Promise<void>;
  /** The current time in ms (ages in `cluster status`); default `Date.now`. */
  now?(): number;
  /** Who runs the command, recorded with a node's cordon or drain; default the OS user name. */
  user?(): string;
}

/**
 * How the CLI reaches the cluster: mutual TLS files (`--tls-ca/--tls-cert/--tls-key`, else
 * `FUXI_TLS_CA/CERT/KEY`) or plaintext (`--insecure`, `FUXI_INSECURE=1`). With neither the
 * client refuses to start, naming `--tls-ca` (TLS is on by default).
 */
export interface CliTransport {
  tls?: { ca: string; cert: string; key: string };
  insecure?: boolean;
}

interface GlobalOpts {
  master?: string;
  tokenFile?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  insecure?: boolean;
  output: 'table' | 'json';
}

/** Runs `fuxi <args>` (args without `node` and the script) and returns the exit code. */
export async function runCli(args: readonly string[], deps: CliDeps): Promise<number> {
  let code: number = EXIT.OK;
  let client: CliClient | undefined;
  let masters: string[] = [];
  const getClient = async (opts: GlobalOpts): Promise<CliClient> => {
    masters = splitAddresses(opts.master ?? '') ?? defaultMasters(deps.env ?? process.env);
    const tokenFile = opts.tokenFile || (deps.env ?? process.env).FUXI_TOKEN_FILE || undefined;
    client ??= await deps.makeClient(masters, cliTransport(opts, deps.env ?? process.env), tokenFile ? { tokenFile } : {});
    return client;
  };
  const out = (s: string) => deps.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
  const err = (s: string) => deps.stderr.write(s.endsWith('\n') ? s : `${s}\n`);
  const emit = (opts: GlobalOpts, json: unknown, table: () => string) => out(opts.output === 'json' ? toJson(json) : table());

  const program = new Command('fuxi')
    .version(FUXI_VERSION, '-V, --version', 'print the version and exit')
    .description('Submit, inspect and kill Fuxi jobs; list nodes; read worker logs; show the cluster status.')
    .exitOverride()
    .configureOutput({ writeOut: (s) => deps.stdout.write(s), writeErr: (s) => deps.stderr.write(s) })
    .option('--master <addresses>', 'master address(es), comma-separated (default: $FUXI_MASTER or 127.0.0.1:7070)')
    .option('--token-file <path>', 'file holding the bearer token to authenticate with (default: $FUXI_TOKEN_FILE)')
    .option('--tls-ca <file>', "CA certificate (PEM) the cluster's certificates are signed by (default: $FUXI_TLS_CA)")
    .option('--tls-cert <file>', 'your client certificate (PEM; default: $FUXI_TLS_CERT)')
    .option('--tls-key <file>', 'its private key (PEM; default: $FUXI_TLS_KEY)')
    .option('--insecure', 'plaintext, no TLS (only for a cluster started with insecure: true; default: $FUXI_INSECURE=1)')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table'))
    .showHelpAfterError('(run "fuxi --help" for usage)')
    .addHelpText(
      'after',
      `\n${EXIT_CODES_HELP}\n\nEnvironment:\n  FUXI_MASTER  master address(es), host:port[,host:port]\n  FUXI_TLS_CA, FUXI_TLS_CERT, FUXI_TLS_KEY  mutual TLS files (as --tls-ca, --tls-cert, --tls-key)\n  FUXI_INSECURE=1  plaintext (as --insecure)\n  FUXI_TOKEN_FILE  file holding the bearer token (see --token-file)\n  FUXI_CLI_SERVER=1  hand submit (without --wait), status, list and kill to your "fuxi cli-server", started at the first (for scripts that run fuxi per task; it ends after FUXI_CLI_SERVER_IDLE_S, default 600, idle seconds)`,
    );

  program
    .command('submit [file]')
    .description('submit a job spec (YAML or JSON); prints the job id. -f submits many (JSON Lines); --array makes a job array')
    .option('--wait', 'wait until the job (every job) finishes; exit 0 if all succeeded, 1 if any failed or was killed')
    .option('--id <id>', 'job id (makes resubmission idempotent); default: the spec\'s "id", or generated. With --array: the array\'s id')
    .option(
      '-f, --jobs <file>',
      'many jobs, one JSON job spec per line (JSON Lines), all checked first (by the master too: a refused line submits none), submitted in few calls',
    )
    .option('--array <indices>', 'a job array: one job <id>_<index> per index (0-999, 1,3,5-9, 0-99:10), %N = at most N running (0-999%50)')
    .action(async (file: string | undefined, o: { wait?: boolean; id?: string; jobs?: string; array?: string }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      if (o.jobs !== undefined && (file !== undefined || o.array !== undefined || o.id !== undefined))
        throw new InvalidArgumentError('--jobs', 'takes the jobs from its file: give no job file, --id or --array with it');
      if (o.jobs === undefined && file === undefined) throw new InvalidArgumentError('file', 'a job spec file is required (or -f FILE.jsonl)');
      // Modules only this command needs are loaded here (YAML and spec validation, the progress bar).
      const jobFile = await import('../sdk/job-file.js');
      if (o.jobs !== undefined || o.array !== undefined) {
        let results: Array<{ jobId: string; created: boolean; error?: Error }>;
        let arrayId = '';
        /** -f: the file line of each result. */
        let lines: number[] = [];
        const row = (r: (typeof results)[number], i: number) => ({
          jobId: r.jobId,
          ...(lines.length > 0 ? { line: lines[i]! } : {}),
          created: r.created,
          error: r.error?.message ?? '',
        });
        const rowLine = (r: ReturnType<typeof row>) =>
          `${r.jobId}\t${r.error ? `refused: ${r.line ? `${o.jobs}:${r.line}: ` : ''}${r.error}` : r.created ? 'submitted' : 'already existed'}`;
        /**
         * All or nothing (Kubernetes' dryRun): prints the refusals of the master's check `checked`,
         * `what` naming them; true when there were any, and then nothing is submitted.
         */
        const refusedInCheck = (checked: typeof results, what: (at: number[]) => string) => {
          const at = checked.flatMap((r, i) => (r.error ? [i] : []));
          if (at.length === 0) return false;
          const rows = at.map((i) => row(checked[i]!, i));
          emit(opts, arrayId ? { arrayId, jobs: rows } : rows, () => rows.map(rowLine).join('\n'));
          err(`error: ${at.length} of ${checked.length} ${what(at)}; nothing was submitted`);
          code = EXIT.USAGE;
          return true;
        };
        if (o.jobs !== undefined) {
          const numbered = jobFile.loadNumberedSpecLines(o.jobs, deps.readFile);
          lines = numbered.map((l) => l.line);
          // Ids made here: the jobs the master checks are the jobs submitted.
          const { makeJobId } = await import('../sdk/job-id.js');
          const specs = numbered.map(({ spec }) => (spec.jobId ? spec : { ...spec, jobId: makeJobId(spec.name, randomUUID()) }));
          const c = await getClient(opts);
          // The master checks every line first, in the calls the submit makes.
          const checked = await c.submitMany(specs, { dryRun: true });
          if (refusedInCheck(checked, (at) => `jobs refused (${o.jobs} line${at.length > 1 ? 's' : ''} ${at.map((i) => lines[i]).join(', ')})`)) return;
          results = await c.submitMany(specs);
        } else {
          const { parseArraySpec } = await import('../sdk/job-array.js');
          const { indices, maxRunning } = parseArraySpec(o.array!);
          const spec = jobFile.loadSpec(file!, o.id, deps.readFile, deps.cwd);
          const c = await getClient(opts);
          // As -f: a member the master would refuse (its id another job's, say) submits no member,
          // so no array is left half made. The submit takes the id the check made.
          const checked = await c.submitArray(spec, { indices, maxRunning, ...(o.id ? { arrayId: o.id } : {}), dryRun: true });
          arrayId = checked.arrayId;
          if (refusedInCheck(checked.results, () => `members of array ${arrayId} refused`)) return;
          results = (await c.submitArray(spec, { indices, maxRunning, arrayId })).results;
        }
        const refused = results.filter((r) => r.error);
        const rows = results.map(row);
        emit(opts, arrayId ? { arrayId, jobs: rows } : rows, () =>
          [...(arrayId ? [`array ${arrayId}: ${results.length} jobs`] : []), ...rows.map(rowLine)].join('\n'),
        );
        if (refused.length > 0) {
          err(`error: ${refused.length} of ${results.length} jobs refused`);
          code = EXIT.USAGE;
          return;
        }
        if (!o.wait) return;
        const c = await getClient(opts);
        const ends = await c.waitAll(arrayId ? { arrayId } : { jobIds: results.map((r) => r.jobId) }, { endsOnly: true });
        const bad = [...ends.values()].filter((j) => j.state !== 'JOB_STATE_SUCCEEDED');
        err(`${ends.size - bad.length} of ${ends.size} jobs succeeded${bad.length ? `; not: ${bad.map((j) => `${j.jobId} (${j.state})`).join(', ')}` : ''}`);
        code = bad.length === 0 ? EXIT.OK : EXIT.JOB_FAILED;
        return;
      }
      const spec = jobFile.loadSpec(file!, o.id, deps.readFile, deps.cwd);
      const c = await getClient(opts);
      const res: SubmitResult = await c.submit(spec);
      if (!o.wait) {
        emit(opts, res, () => res.jobId);
        if (!res.created) err(`note: job ${res.jobId} already existed; it was not submitted again`);
        return;
      }
      if (opts.output !== 'json') out(res.jobId);
      if (!res.created) err(`note: job ${res.jobId} already existed; waiting for it`);
      const progress = (await import('./progress.js')).createProgress(deps.stderr);
      let final: JobInfo__Output;
      try {
        final = await c.waitFor(res.jobId, (job) => progress.update(job));
      } finally {
        progress.stop();
      }
      if (opts.output === 'json') out(toJson({ ...res, job: final }));
      err(finalLine(final));
      code = final.state === 'JOB_STATE_SUCCEEDED' ? EXIT.OK : EXIT.JOB_FAILED;
    });

  program
    .command('wait <jobs...>')
    .description('wait until the jobs (job ids, or job array ids) finish; exit 0 if all succeeded, 1 if any failed or was killed')
    .action(async (ids: string[], _o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const { jobIds, arrayIds } = await splitArrays(c, ids);
      const ends = new Map<string, JobInfo__Output>();
      for (const arrayId of arrayIds) for (const [k, v] of await c.waitAll({ arrayId }, { endsOnly: true })) ends.set(k, v);
      if (jobIds.length > 0) for (const [k, v] of await c.waitAll({ jobIds }, { endsOnly: true })) ends.set(k, v);
      const all = [...ends.values()];
      const bad = all.filter((j) => j.state !== 'JOB_STATE_SUCCEEDED');
      // A job whose end never came is not a success.
      const unseen = jobIds.filter((id) => !ends.has(id));
      emit(opts, all, () => [...all.map((j) => finalLine(j)), ...unseen.map((id) => `job ${id}: no end seen`)].join('\n'));
      code = bad.length === 0 && unseen.length === 0 ? EXIT.OK : EXIT.JOB_FAILED;
    });

  program
    .command('status <job>')
    .description('show a job: state, message, per-task progress, AM node')
    .action(async (jobId: string, _o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const job = await orArray(() => c.get(jobId), c, jobId);
      if (Array.isArray(job)) {
        emit(opts, job, () => formatArrayStatus(jobId, job));
        return;
      }
      emit(opts, job, () => formatJobStatus(job));
    });

  program
    .command('list')
    .description('list jobs')
    .option('--state <state>', `only jobs in this state (${JOB_STATE_NAMES.join(', ')}); repeatable or comma-separated`, collect, [])
    .option('--array <id>', 'only the members of this job array')
    .option('--limit <n>', 'at most n jobs (a page; the next one starts with --after)')
    .option('--after <job>', 'the page after this job (submission order)')
    .action(async (o: { state: string[]; array?: string; limit?: string; after?: string }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const states = parseStates(o.state);
      const c = await getClient(opts);
      if (o.limit !== undefined || o.after !== undefined) {
        const limit = o.limit === undefined ? 0 : Number(o.limit);
        if (!Number.isInteger(limit) || limit < (o.limit === undefined ? 0 : 1))
          throw new InvalidArgumentError('--limit', `must be a whole number >= 1, got ${JSON.stringify(o.limit)}`);
        const page = await c.listPage({
          ...(states.length ? { states } : {}),
          ...(o.array ? { arrayId: o.array } : {}),
          limit,
          ...(o.after ? { after: o.after } : {}),
        });
        emit(opts, page, () => formatJobList(page.jobs));
        if (page.nextAfter && opts.output !== 'json') err(`more: fuxi list --limit ${limit} --after ${page.nextAfter}`);
        return;
      }
      const jobs = await c.list({ ...(states.length ? { states } : {}), ...(o.array ? { arrayId: o.array } : {}) });
      emit(opts, jobs, () => formatJobList(jobs));
    });

  program
    .command('kill <job>')
    .description('kill a job: stop all its workers')
    .option('--reason <text>', 'why (recorded as the job message)')
    .action(async (jobId: string, o: { reason?: string }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const job = await orArray(() => c.kill(jobId, o.reason ?? ''), c, jobId);
      if (Array.isArray(job)) {
        // A job array: every member that has not ended, the held ones first (an active member's
        // end admits the next held one, which would be started only to be killed).
        const held = (m: JobInfo__Output) => !isEnded(m) && m.message.startsWith('held');
        const killed: JobInfo__Output[] = [];
        for (const m of [...job.filter(held), ...job.filter((m) => !held(m))]) killed.push(isEnded(m) ? m : await c.kill(m.jobId, o.reason ?? ''));
        emit(opts, killed, () => `array ${jobId}: ${killed.filter((k) => k.state === 'JOB_STATE_KILLED').length} of ${killed.length} jobs killed`);
        return;
      }
      emit(opts, job, () => finalLine(job));
    });

  program
    .command('nodes')
    .description(
      'list nodes: address, rack, state (ready, cordoned, draining, timing out, partitioned, lost), capacity, allocated, free, running workers, the testbed holding it; with who cordoned or drains a node, when and why',
    )
    .action(async (_o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const nodes: NodeStatus__Output[] = await c.nodes();
      emit(opts, nodes, () => formatNodes(nodes));
    });

  program
    .command('logs <job> <task> <instance>')
    .description("write a worker's stdout (or stderr) to stdout, raw (-o is ignored)")
    .option('--stderr', 'read stderr instead of stdout')
    .option('--attempt <n>', 'attempt number (default: the latest)')
    .option('-f, --follow', 'keep reading while the worker runs')
    .action(async (jobId: string, task: string, instance: string, o: { stderr?: boolean; attempt?: string; follow?: boolean }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const logOpts: LogOptions = { stream: o.stderr ? 'stderr' : 'stdout', follow: !!o.follow };
      if (o.attempt !== undefined) logOpts.attempt = parseNonNegativeInt(o.attempt, '--attempt', 1);
      const n = parseNonNegativeInt(instance, 'INSTANCE', 0);
      const write = deps.writeRaw ?? (async (b: Buffer) => void deps.stdout.write(b));
      const c = await getClient(opts);
      for await (const chunk of c.logs(jobId, task, n, logOpts)) await write(chunk);
    });

  program
    .command('fetch <job> <task> <instance> <path>')
    .description("write a file from a finished worker's output directory ($FUXI_OUTPUT_DIR) to stdout, raw, from the host that holds it")
    .action(async (jobId: string, task: string, instance: string, path: string, _o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const n = parseNonNegativeInt(instance, 'INSTANCE', 0);
      const c = await getClient(opts);
      const data = await c.fetchOutput(jobId, task, n, path);
      const write = deps.writeRaw ?? (async (b: Buffer) => void deps.stdout.write(b));
      await write(data);
    });

  const user = (): string => (deps.user ? deps.user() : osUser());
  const node = program.command('node').description('a node\'s administrative state: "fuxi node cordon|uncordon|drain NODE"');
  node
    .command('cordon <node>')
    .description('place nothing new on the node; what runs there stays (survives a master failover)')
    .option('--reason <text>', 'why (shown by "fuxi nodes")')
    .action(async (nodeId: string, o: { reason?: string }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const n = await c.cordon(nodeId, { reason: o.reason ?? '', by: user() });
      emit(opts, n, () => `node ${nodeId} cordoned`);
    });
  node
    .command('uncordon <node>')
    .description('make the node schedulable again; ends a drain (revoked work does not come back)')
    .action(async (nodeId: string, _o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const n = await c.uncordon(nodeId, { by: user() });
      emit(opts, n, () => `node ${nodeId} uncordoned`);
    });
  node
    .command('drain <node>')
    .description(
      'place nothing new on the node; its batch work finishes or, at the deadline, has its slots revoked and runs again elsewhere; its AMs move last; then the node stays cordoned (drained)',
    )
    .option('--reason <text>', 'why (shown by "fuxi nodes")')
    .option('--deadline <duration>', 'how long work may take to finish before it is moved: e.g. 90s, 10m, 2h (default 1h)')
    .action(async (nodeId: string, o: { reason?: string; deadline?: string }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const deadlineMs = o.deadline === undefined ? 0 : parseDuration(o.deadline, '--deadline');
      const c = await getClient(opts);
      const n = await c.drain(nodeId, { reason: o.reason ?? '', by: user(), deadlineMs });
      emit(opts, n, () => `node ${nodeId} draining${n?.admin?.deadlineMs ? ` (deadline ${fmtTime(n.admin.deadlineMs)})` : ''}`);
    });

  const testbed = program
    .command('testbed')
    .description('hosts reserved for a quota group (survive a master failover): "fuxi testbed create|list|delete"; a job names one with "testbed: NAME"');
  testbed
    .command('create <name>')
    .description(
      "reserve hosts for a quota group: only its jobs get new slots there while the testbed is active (other groups' workers already there run on until they finish)",
    )
    .requiredOption('--group <group>', 'the quota group the hosts are reserved for')
    .option('--hosts <ids>', 'these nodes, comma-separated')
    .option('--label <key=value>', 'every node carrying this label')
    .option('--count <n>', 'this many hosts the master picks (healthy, uncordoned, least loaded)')
    .option('--start <time>', 'active from this time (ISO 8601, e.g. 2026-12-01T08:00:00Z); default now')
    .option('--end <time>', 'active until this time (ISO 8601); default: until deleted')
    .option('--for <duration>', 'active this long from the start, e.g. 90m, 2h, 3d (instead of --end)')
    .action(
      async (name: string, o: { group: string; hosts?: string; label?: string; count?: string; start?: string; end?: string; for?: string }, cmd: Command) => {
        const opts = cmd.optsWithGlobals<GlobalOpts>();
        const given = [o.hosts, o.label, o.count].filter((x) => x !== undefined).length;
        if (given !== 1) throw new InvalidArgumentError('--hosts/--label/--count', 'give exactly one');
        if (o.end !== undefined && o.for !== undefined) throw new InvalidArgumentError('--for', 'give --end or --for, not both');
        const now = deps.now ? deps.now() : Date.now();
        const startMs = o.start === undefined ? undefined : parseTime(o.start, '--start');
        const endMs = o.end !== undefined ? parseTime(o.end, '--end') : o.for !== undefined ? (startMs ?? now) + parseDuration(o.for, '--for') : undefined;
        const c = await getClient(opts);
        const res = await c.createTestbed({
          name,
          group: o.group,
          ...(o.hosts !== undefined ? { hosts: splitAddresses(o.hosts) ?? [] } : {}),
          ...(o.label !== undefined ? { label: o.label } : {}),
          ...(o.count !== undefined ? { count: parseNonNegativeInt(o.count, '--count', 1) } : {}),
          ...(startMs !== undefined ? { startMs } : {}),
          ...(endMs !== undefined ? { endMs } : {}),
          by: user(),
        });
        emit(opts, res, () => {
          const t = res.testbed;
          const lines = [`testbed ${name} for group ${t?.quotaGroup ?? o.group}: ${t?.hosts.join(', ') ?? ''} (${t ? fmtWindow(t) : '?'})`];
          for (const h of res.othersRunning)
            lines.push(`  ${h.nodeId}: ${h.workers} worker${h.workers === 1 ? '' : 's'} of other groups running; they finish there, no new ones start`);
          return lines.join('\n');
        });
      },
    );
  testbed
    .command('list')
    .description('list testbeds: group, hosts, window, whether active now')
    .option('--json', 'JSON output (as -o json)')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const list = await c.testbeds();
      emit(o.json ? { ...opts, output: 'json' } : opts, list, () => formatTestbeds(list));
    });
  testbed
    .command('delete <name>')
    .description('delete a testbed: its hosts are ordinary again')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      await c.deleteTestbed(name, { by: user() });
      emit(opts, { name, deleted: true }, () => `testbed ${name} deleted`);
    });

  const cluster = program.command('cluster').description('the cluster as a whole (see "fuxi cluster status")');
  cluster
    .command('status')
    .description('show the leader, epoch, fault FSM state (S0 normal .. S6), open fault events and failover recovery progress')
    .action(async (_o: unknown, cmd: Command) => {
      const opts = cmd.optsWithGlobals<GlobalOpts>();
      const c = await getClient(opts);
      const st = await c.clusterStatus();
      emit(opts, st, () => formatClusterStatus(st, deps.now ? deps.now() : Date.now()));
    });

  const certs = program.command('certs').description('make a cluster CA and certificates signed by it (with the openssl binary)');
  certs
    .command('ca')
    .description('make D/ca.crt and D/ca.key (0600): the cluster CA')
    .requiredOption('--dir <dir>', 'folder for the CA and the certificates it signs')
    .option('--force', 'replace an existing CA (every certificate it signed stops working)')
    .action(async (o: { dir: string; force?: boolean }) => {
      const { makeCa } = await import('../sdk/certs.js');
      const ca = makeCa(o.dir, { force: o.force ?? false });
      out(`CA ${ca.cert} (key ${ca.key}, mode 0600)`);
    });
  certs
    .command('issue')
    .description('make D/N.crt and D/N.key (0600) signed by D/ca.crt: subject CN=N (identity), O=R (role)')
    .requiredOption('--dir <dir>', 'folder holding ca.crt and ca.key')
    .requiredOption('--name <name>', 'identity: "master", an agent\'s node id, a user\'s name')
    .requiredOption('--role <role>', 'master, agent, admin or user')
    .option('--ip <address>', 'IP address peers dial this host by (repeatable; a server needs every one)', collect, [])
    .option('--dns <name>', 'DNS name peers dial this host by (repeatable)', collect, [])
    .option('--days <n>', 'validity in days (default 825)')
    .option('--force', 'replace an existing N.crt / N.key')
    .action(async (o: { dir: string; name: string; role: string; ip: string[]; dns: string[]; days?: string; force?: boolean }) => {
      const { issueCert } = await import('../sdk/certs.js');
      const days = o.days === undefined ? undefined : parseNonNegativeInt(o.days, '--days', 1);
      const c = issueCert({ dir: o.dir, name: o.name, role: o.role, ips: o.ip, dns: o.dns, force: o.force ?? false, ...(days ? { days } : {}) });
      out(
        `certificate ${c.cert} (key ${c.key}, mode 0600; CN=${o.name}, O=${o.role}${o.ip.length + o.dns.length ? `, SANs ${[...o.dns, ...o.ip].join(' ')}` : ''})`,
      );
    });

  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (e) {
    code = exitCodeFor(e);
    // commander has already printed its own message (and usage hint).
    if (!isCommanderError(e)) err(errorLine(e, masters));
    if (code === EXIT.OTHER && (deps.env ?? process.env).FUXI_DEBUG && e instanceof Error && e.stack) err(e.stack);
  } finally {
    client?.close();
  }
  return code;
}

/** The transport settings: flags first, then the environment. Errors name the flag. */
export function cliTransport(opts: Pick<GlobalOpts, 'tlsCa' | 'tlsCert' | 'tlsKey' | 'insecure'>, env: NodeJS.ProcessEnv): CliTransport {
  const ca = opts.tlsCa ?? env.FUXI_TLS_CA;
  const cert = opts.tlsCert ?? env.FUXI_TLS_CERT;
  const key = opts.tlsKey ?? env.FUXI_TLS_KEY;
  const insecure = opts.insecure === true || env.FUXI_INSECURE === '1' || env.FUXI_INSECURE === 'true';
  if (ca || cert || key) {
    if (insecure && (opts.tlsCa || opts.tlsCert || opts.tlsKey || opts.insecure))
      throw new InvalidArgumentError('--insecure', 'give either --insecure or --tls-ca/--tls-cert/--tls-key, not both');
    if (!insecure) {
      const missing = (
        [
          ['--tls-ca', ca],
          ['--tls-cert', cert],
          ['--tls-key', key],
        ] as const
      ).find(([, v]) => !v);
      if (missing)
        throw new InvalidArgumentError(
          missing[0],
          'required with the other TLS files (--tls-ca, --tls-cert and --tls-key go together; env FUXI_TLS_CA, FUXI_TLS_CERT, FUXI_TLS_KEY)',
        );
      return { tls: { ca: ca!, cert: cert!, key: key! } };
    }
  }
  return insecure ? { insecure: true } : {};
}

function parseStates(list: readonly string[]): JobStateName[] {
  const out: JobStateName[] = [];
  for (const s of list.flatMap((x) => x.split(',')).filter((x) => x.trim() !== '')) {
    const st = parseJobState(s);
    if (!st) throw new InvalidArgumentError('--state', `unknown state "${s}" (known: ${JOB_STATE_NAMES.join(', ')})`);
    out.push(st);
  }
  return out;
}

function parseNonNegativeInt(s: string, what: string, min: number): number {
  if (!/^\d+$/.test(s.trim()) || Number(s) < min || Number(s) > 2 ** 31 - 1) {
    throw new InvalidArgumentError(what, `must be an integer >= ${min}, got ${JSON.stringify(s)}`);
  }
  return Number(s);
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** The longest drain deadline the master takes (30 days). */
const MAX_DEADLINE_MS = 30 * 86_400_000;

/** A duration such as `500ms`, `90s`, `10m`, `2h`, `1d` (or `1h30m`) in ms; above zero, at most 30 days. */
export function parseDuration(s: string, what: string): number {
  const t = s.trim();
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== t) {
    throw new InvalidArgumentError(what, `must be a duration such as 90s, 10m or 2h, got ${JSON.stringify(s)}`);
  }
  const ms = Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0));
  if (ms <= 0 || ms > MAX_DEADLINE_MS) throw new InvalidArgumentError(what, `must be above 0 and at most 30d, got ${JSON.stringify(s)}`);
  return ms;
}

/** An ISO 8601 time (or ms since the epoch) as ms since the epoch. */
export function parseTime(s: string, what: string): number {
  const t = /^\d+$/.test(s.trim()) ? Number(s.trim()) : Date.parse(s);
  if (!Number.isFinite(t) || t <= 0) throw new InvalidArgumentError(what, `must be a time such as 2026-12-01T08:00:00Z, got ${JSON.stringify(s)}`);
  return t;
}

/** The OS user name ('' when the OS has none for this uid). */
function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return '';
  }
}

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}
