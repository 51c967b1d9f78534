// Long runs through the official TypeScript MCP SDK (@modelcontextprotocol/sdk) against the
// `automation` example.
//
//   node long_run.mjs NODE_MODULES stdio PATH_TO_AUTOMATION STORE_FILE
//   node long_run.mjs NODE_MODULES http URL
//
// NODE_MODULES is the folder the SDK was installed into (target/clients/node/node_modules).
// Three checks, each on the official client's own connection: a long automation/v1 program run
// with an onprogress callback; one cancelled through an AbortSignal (the SDK sends
// notifications/cancelled), then fetched by the run id its progress named in _meta; one run as a
// task (the SDK's task API follows the 2025-11-25 draft, not the Tasks extension rmcp speaks, so
// raw tools/call and tasks/get requests on a second client that declares the extension). Prints
// one JSON line of findings; exits 1 with the failed check's message.

import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [modules, transportKind, ...rest] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/stdio.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js');
const z = await load('zod/v4/index.js');

const EXT = 'io.github.jafarsa0/pilotage';
const TASKS = 'io.modelcontextprotocol/tasks';
const EXECUTE = 'run_automation';
const TRACE = 'trace_automation';
const CONTEXT = { timezone: 'Europe/Paris' };
const Any = z.object({}).passthrough();

const waits = (n, ms) => ({ steps: Array.from({ length: n }, (_, i) => ({ id: `s${i}`, call: 'wait', with: { ms } })) });
const slowLoop = (n, ms) => ({
  steps: [{ id: 'each', loop: Array.from({ length: n }, (_, i) => i), as: 'i', steps: [{ id: 'pause', call: 'wait', with: { ms } }] }],
});
const runArgs = (program) => ({ automation: program, mode: 'immediate', context: CONTEXT });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

async function connect(extensions) {
  const transport =
    transportKind === 'stdio'
      ? new StdioClientTransport({ command: rest[0], args: ['--store', rest[1]], stderr: 'inherit' })
      : new StreamableHTTPClientTransport(new URL(rest[0]));
  const client = new Client({ name: 'pilotage-long-run', version: '0' }, { capabilities: { extensions } });
  await client.connect(transport);
  return client;
}

async function progressRun(client) {
  const seen = [];
  const result = await client.callTool({ name: EXECUTE, arguments: runArgs(waits(2000, 0)) }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  check(result.structuredContent?.outcome?.status === 'success', `the long run did not succeed: ${JSON.stringify(result)}`);
  check(seen.length > 1, `no progress reported: ${JSON.stringify(seen)}`);
  const last = seen[seen.length - 1];
  check(last.progress === 2000 && last.total === 2000 && last.message === 's1999', `last progress: ${JSON.stringify(last)}`);
  check(last._meta?.[EXT]?.run_id === result.structuredContent.run_id, 'progress names the run in _meta');
  return { progress_notifications: seen.length };
}

async function cancelledRun(client) {
  const abort = new AbortController();
  let runId;
  const call = client
    .callTool({ name: EXECUTE, arguments: runArgs(slowLoop(40, 100)) }, undefined, {
      signal: abort.signal,
      onprogress: (p) => {
        runId = p._meta?.[EXT]?.run_id;
        abort.abort('the operator changed their mind');
      },
    })
    .then(
      () => 'answered',
      () => 'aborted',
    );
  check((await call) === 'aborted', 'the cancelled call was answered');
  check(runId, 'no progress notification named the run');
  for (let i = 0; i < 200; i++) {
    const fetched = await client.callTool({ name: TRACE, arguments: { run_id: runId } });
    if (!fetched.isError) {
      const { outcome, trace } = fetched.structuredContent;
      check(outcome.status === 'partial', `a cancelled run is partial: ${JSON.stringify(outcome)}`);
      check(outcome.error.startsWith('the client cancelled the run'), JSON.stringify(outcome));
      check(trace.steps.length > 0 && trace.steps.length < 41, `a cancelled run stops early: ${trace.steps.length}`);
      return { cancelled_run: runId, cancelled_steps: trace.steps.length };
    }
    await sleep(50);
  }
  throw new Error(`the cancelled run ${runId} was never retained`);
}

async function taskRun(client) {
  const created = await client.request({ method: 'tools/call', params: { name: EXECUTE, arguments: runArgs(slowLoop(10, 50)) } }, Any);
  check(created.resultType === 'task', `a task-augmented call answers with a task: ${JSON.stringify(created)}`);
  const statuses = [];
  let got;
  for (let i = 0; i < 400; i++) {
    got = await client.request({ method: 'tasks/get', params: { taskId: created.taskId } }, Any);
    statuses.push(got.status);
    if (got.status !== 'working') break;
    await sleep(got.pollIntervalMs ?? 250);
  }
  check(got.status === 'completed', `the task did not complete: ${JSON.stringify(got)}`);
  const out = got.result.structuredContent;
  check(out.outcome.status === 'success', `the task's run did not succeed: ${JSON.stringify(out)}`);
  check(out.run_id === created._meta[EXT].run_id, "the task's result is its run's");
  return { task: created.taskId, task_polls: statuses.length, task_saw_working: statuses.includes('working') };
}

try {
  const findings = { sdk: 'typescript', transport: transportKind };
  const plain = await connect({ [EXT]: {} });
  Object.assign(findings, await progressRun(plain), await cancelledRun(plain));
  await plain.close();
  const tasked = await connect({ [EXT]: {}, [TASKS]: {} });
  Object.assign(findings, await taskRun(tasked));
  await tasked.close();
  console.log(JSON.stringify(findings));
  process.exit(0);
} catch (e) {
  console.error(`FAILED: ${e.message}`);
  process.exit(1);
}
