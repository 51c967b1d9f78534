"""A host driving the `gate` example through the official Python MCP SDK (`mcp` 2.x).

    python gate.py SCENARIO_JSON

SCENARIO_JSON is one JSON object:

    {"command": [GATE, ARG...],          the gate and its arguments (spawned over stdio)
     "elicitation": "approve" | "approve_no" | "decline" | "cancel" | "absent",
     "calls": [{"tool": NAME, "arguments": {...}, "progress": true?}, ...]}

An argument written {"$from": N, "member": M} is replaced by member M of call N's
structuredContent (a program_ref from a promotion). The host calls each tool in order on one
session and answers every elicitation as told
("absent": the session declares no elicitation capability). Prints one JSON line of findings:
the initialize result, the tool list, each call's result (isError, structuredContent, and the
progress notifications it saw) and every question the host was asked.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

EXT = "io.github.jafarsa0/pilotage"


def resolve(value: Any, calls: list[dict[str, Any]]) -> Any:
    if isinstance(value, dict) and "$from" in value:
        return (calls[value["$from"]]["structured"] or {}).get(value["member"])
    if isinstance(value, dict):
        return {k: resolve(v, calls) for k, v in value.items()}
    return value


def dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True) if model is not None else None


async def main(scenario: dict[str, Any]) -> None:
    questions: list[str] = []
    mode = scenario["elicitation"]

    async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
        questions.append(params.message)
        if mode == "approve":
            return types.ElicitResult(action="accept", content={"approve": True})
        if mode == "approve_no":
            return types.ElicitResult(action="accept", content={"approve": False})
        return types.ElicitResult(action="decline" if mode == "decline" else "cancel")

    command = scenario["command"]
    params = StdioServerParameters(command=command[0], args=command[1:])
    findings: dict[str, Any] = {"questions": questions, "calls": []}
    async with stdio_client(params) as (read, write):
        kwargs: dict[str, Any] = {"extensions": {EXT: {}}}
        if mode != "absent":
            kwargs["elicitation_callback"] = on_elicit
        async with ClientSession(read, write, **kwargs) as s:
            init = await s.initialize()
            findings["initialize"] = dump(init)
            findings["tools"] = [dump(t) for t in (await s.list_tools()).tools]
            for call in scenario["calls"]:
                progress: list[float] = []

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    progress.append(value)

                callback = on_progress if call.get("progress") else None
                arguments = resolve(call.get("arguments", {}), findings["calls"])
                result = await s.call_tool(call["tool"], arguments, progress_callback=callback)
                await anyio.sleep(0.05 if callback else 0)  # progress callbacks run in spawned tasks
                findings["calls"].append(
                    {
                        "tool": call["tool"],
                        "is_error": bool(result.is_error),
                        "structured": result.structured_content,
                        "progress": len(progress),
                    }
                )
    print(json.dumps(findings))


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
