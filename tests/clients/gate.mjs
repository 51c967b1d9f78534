// A host driving the `gate` example through the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk): the same scenarios as tests/clients/gate.py.
//
//   node gate.mjs NODE_MODULES SCENARIO_JSON
//
// SCENARIO_JSON: {"command": [GATE, ARG...], "elicitation": "approve" | "approve_no" | "decline" |
// "cancel" | "absent", "calls": [{"tool", "arguments", "progress"?}, ...]}; an argument
// {"$from": N, "member": M} is member M of call N's structuredContent. The client declares the
// elicitation capability unless "absent" and answers each question as told. Prints one JSON line
// of findings (initialize result, tools, each call's isError/structuredContent/progress count,
// the questions asked).

import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [modules, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/stdio.js');
const { ElicitRequestSchema } = await load('@modelcontextprotocol/sdk/dist/esm/types.js');

const EXT = 'io.github.jafarsa0/pilotage';
const mode = scenario.elicitation;
const questions = [];

const capabilities = { extensions: { [EXT]: {} } };
if (mode !== 'absent') capabilities.elicitation = { form: {} };
const client = new Client({ name: 'pilotage-gate-host', version: '0' }, { capabilities });
if (mode !== 'absent') {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params.message);
    if (mode === 'approve') return { action: 'accept', content: { approve: true } };
    if (mode === 'approve_no') return { action: 'accept', content: { approve: false } };
    return { action: mode === 'decline' ? 'decline' : 'cancel' };
  });
}

const [command, ...args] = scenario.command;
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));

const resolve = (value, calls) => {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    if ('$from' in value) return calls[value.$from].structured?.[value.member];
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, calls)]));
  }
  return value;
};

const findings = { questions, calls: [] };
findings.initialize = { capabilities: client.getServerCapabilities(), instructions: client.getInstructions() };
findings.tools = (await client.listTools()).tools;
for (const call of scenario.calls) {
  let progress = 0;
  const options = call.progress ? { onprogress: () => (progress += 1) } : undefined;
  const result = await client.callTool(
    { name: call.tool, arguments: resolve(call.arguments ?? {}, findings.calls) },
    undefined,
    options,
  );
  findings.calls.push({ tool: call.tool, is_error: Boolean(result.isError), structured: result.structuredContent ?? null, progress });
}
await client.close();
console.log(JSON.stringify(findings));
