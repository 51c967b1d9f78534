"""A minimal Pilotage server written with the official Python MCP SDK (`mcp` 2.x, low-level
server), sharing no code with pilotage: the peer `tests/it/host_python.rs` drives with
`pilotage::host` over stdio.

    python pilotage_server.py

One text Language, `lines/v1`: a program is lines of `ECHO <text>` (read-only) or
`FETCH <url>` (reaches outside: `openWorld`; nothing is fetched, the step reports the URL).
Its tools have names no default would guess: `lines_check` validates, `lines_go` executes,
and the program argument is `script`. Every `tools/call` is appended, one name per line, to
the file named by the environment variable `PILOTAGE_PY_CALLS`, so the test can see what the
server received.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

EXT = "io.github.jafarsa0/pilotage"
LANGUAGE = "lines/v1"
ARGUMENT = "script"
SAFE = {"readOnly": True, "destructive": False, "openWorld": False}
OUTSIDE = {"readOnly": True, "destructive": False, "openWorld": True}

MANIFEST = {
    "pilotage": "1.1",
    "languages": [
        {
            "name": LANGUAGE,
            "title": "Lines of ECHO and FETCH",
            "guides": "pilotage_get_guide",
            "loop": {"validate": "lines_check", "execute": "lines_go"},
            "capabilities": {"guides": True, "validate": True, "plan": True, "execute": True},
            "locator": "text-range",
            "execution": "immediate",
            "trace": "summary",
            "retention": "none",
        }
    ],
}

GUIDE = {
    "id": "core",
    "title": "lines/v1",
    "level": "core",
    "topics": ["closed-sets"],
    "language": LANGUAGE,
    "version": "1",
    "format": "text/markdown",
}
BODY = "One command a line: `ECHO text` or `FETCH url`. Codes: `unknown_command`. Risks: `safe`, `outside`."


def declared(name: str, properties: dict[str, Any]) -> types.Tool:
    return types.Tool(
        name=name,
        input_schema={"type": "object", "properties": properties},
        _meta={EXT: {"argument": ARGUMENT, "language": LANGUAGE}},
    )


def result(structured: dict[str, Any], error: bool = False) -> types.CallToolResult:
    text = json.dumps(structured)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def judge(script: Any) -> dict[str, Any]:
    if not isinstance(script, str):
        diagnostic = {"severity": "error", "code": "unknown_command", "path": {"start": {"line": 1, "column": 1}, "end": {"line": 1, "column": 1}}, "message": "a script is text"}
        return {"valid": False, "diagnostics": [diagnostic]}
    steps, diagnostics = [], []
    for number, line in enumerate(script.splitlines(), start=1):
        command = line.split(" ", 1)[0]
        if command not in ("ECHO", "FETCH"):
            where = {"start": {"line": number, "column": 1}, "end": {"line": number, "column": len(command) + 1}}
            diagnostics.append({"severity": "error", "code": "unknown_command", "path": where, "message": f"unknown command {command!r}"})
            continue
        outside = command == "FETCH"
        steps.append({"id": f"line-{number}", "risk": "outside" if outside else "safe", "risk_hints": OUTSIDE if outside else SAFE})
    if diagnostics:
        return {"valid": False, "diagnostics": diagnostics}
    worst = OUTSIDE if any(s["risk"] == "outside" for s in steps) else SAFE
    plan = {"steps": steps, "max_risk": "outside" if worst is OUTSIDE else "safe", "max_risk_hints": worst}
    return {"valid": True, "diagnostics": [], "plan": plan}


def run(script: str) -> dict[str, Any]:
    steps, said = [], []
    for number, line in enumerate(script.splitlines(), start=1):
        command, _, rest = line.partition(" ")
        said.append(rest if command == "ECHO" else f"would fetch {rest}")
        steps.append({"id": f"line-{number}", "outcome": {"ok": True, "status": "success", "error": None}})
    ok = {"ok": True, "status": "success", "error": None}
    return {"run_id": "py-run-1", "outcome": ok, "output": said, "trace": {"run_id": "py-run-1", "level": "summary", "steps": steps}}


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name="pilotage_manifest", input_schema={"type": "object"}),
            types.Tool(
                name="pilotage_get_guide",
                input_schema={"type": "object", "properties": {"language": {"type": "string"}, "id": {"type": "string"}, "topic": {"type": "string"}}, "required": ["language"]},
            ),
            declared("lines_check", {ARGUMENT: {}, "context": {}}),
            declared("lines_go", {ARGUMENT: {}, "program_ref": {"type": "string"}, "input": {}, "context": {}, "trace_level": {"type": "string"}, "store": {"type": "boolean"}}),
        ]
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    log = os.environ.get("PILOTAGE_PY_CALLS")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(params.name + "\n")
    args = params.arguments or {}
    if params.name == "pilotage_manifest":
        return result(MANIFEST)
    if params.name == "pilotage_get_guide":
        if args.get("language") != LANGUAGE:
            return result({"error": {"kind": "not_found", "message": "unknown language"}}, error=True)
        if "id" not in args:
            return result({"guides": [dict(GUIDE, size_bytes=len(BODY.encode()))]})
        if args["id"] != "core":
            return result({"error": {"kind": "not_found", "message": "unknown guide"}}, error=True)
        return result({"guide": dict(GUIDE, size_bytes=len(BODY.encode()), body=BODY)})
    if params.name == "lines_check":
        return result(judge(args.get(ARGUMENT)))
    if params.name == "lines_go":
        verdict = judge(args.get(ARGUMENT))
        if not verdict["valid"]:
            failed = {"ok": False, "status": "validation_error", "error": "invalid"}
            return result({"run_id": "py-refused", "outcome": failed, "diagnostics": verdict["diagnostics"]})
        return result(run(args[ARGUMENT]))
    return result({"error": {"kind": "not_found", "message": "unknown tool"}}, error=True)


async def main() -> None:
    server = Server("python-pilotage", version="0", on_list_tools=list_tools, on_call_tool=call_tool)
    options = server.create_initialization_options(extensions={EXT: {}})
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
