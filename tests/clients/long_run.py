"""Long runs through the official Python MCP SDK (`mcp` 2.x) against the `automation` example.

    python long_run.py stdio PATH_TO_AUTOMATION STORE_FILE
    python long_run.py http URL

Three checks, each on the official client's own session: a long automation/v1 program run with
a progress callback; one cancelled by cancelling the call (the SDK sends
`notifications/cancelled`), then fetched by the run id its progress named; one run as a task
(the SDK has no task API for the Tasks extension rmcp speaks, so raw `tasks/get` requests on a
second session that declares the extension). Prints one JSON line of findings; exits 1 with
the failed check's message.
"""

from __future__ import annotations

import json
import sys
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

EXT = "io.github.jafarsa0/pilotage"
TASKS = "io.modelcontextprotocol/tasks"
EXECUTE = "run_automation"
TRACE = "trace_automation"
CONTEXT = {"timezone": "Europe/Paris"}


def waits(n: int, ms: int) -> dict[str, Any]:
    return {"steps": [{"id": f"s{i}", "call": "wait", "with": {"ms": ms}} for i in range(n)]}


def slow_loop(n: int, ms: int) -> dict[str, Any]:
    return {
        "steps": [
            {"id": "each", "loop": list(range(n)), "as": "i", "steps": [{"id": "pause", "call": "wait", "with": {"ms": ms}}]}
        ]
    }


def run_args(program: dict[str, Any]) -> dict[str, Any]:
    return {"automation": program, "mode": "immediate", "context": CONTEXT}


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


@asynccontextmanager
async def session(argv: list[str], extensions: dict[str, dict[str, Any]], on_message=None):
    """One initialized official client session over the transport named by `argv`."""
    if argv[0] == "stdio":
        params = StdioServerParameters(command=argv[1], args=["--store", argv[2]])
        transport = stdio_client(params)
    else:
        transport = streamable_http_client(argv[1])
    async with transport as (read, write):
        kwargs: dict[str, Any] = {"extensions": extensions}
        if on_message is not None:
            kwargs["message_handler"] = on_message
        async with ClientSession(read, write, **kwargs) as s:
            await s.initialize()
            yield s


async def progress_run(s: ClientSession) -> dict[str, Any]:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await s.call_tool(EXECUTE, run_args(waits(2000, 0)), progress_callback=on_progress)
    await anyio.sleep(0.2)  # progress callbacks run in spawned tasks
    out = result.structured_content or {}
    check(out.get("outcome", {}).get("status") == "success", f"the long run did not succeed: {out}")
    check(len(seen) > 1, f"no progress reported: {seen}")
    ordered = sorted(seen)
    check(ordered[-1][:2] == (2000.0, 2000.0), f"the last progress is not 2000 of 2000: {ordered[-1]}")
    check(ordered[-1][2] == "s1999", f"the last progress names the last step: {ordered[-1]}")
    return {"progress_notifications": len(seen)}


async def cancelled_run(s: ClientSession, run_ids: list[str]) -> dict[str, Any]:
    first = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        first.set()

    with anyio.move_on_after(30) as scope:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await s.call_tool(EXECUTE, run_args(slow_loop(40, 100)), progress_callback=on_progress)

            tg.start_soon(call)
            await first.wait()
            tg.cancel_scope.cancel()  # abandoning the call sends notifications/cancelled
    check(not scope.cancelled_caught, "the cancelled run never reported progress")
    await anyio.sleep(0.1)
    check(bool(run_ids), "no progress notification named the run")
    run_id = run_ids[-1]
    for _ in range(200):
        fetched = await s.call_tool(TRACE, {"run_id": run_id})
        if not fetched.is_error:
            out = fetched.structured_content or {}
            outcome = out.get("outcome", {})
            check(outcome.get("status") == "partial", f"a cancelled run is partial: {out}")
            check(str(outcome.get("error", "")).startswith("the client cancelled the run"), f"{outcome}")
            steps = out.get("trace", {}).get("steps", [])
            check(0 < len(steps) < 41, f"a cancelled run stops early: {len(steps)} steps")
            return {"cancelled_run": run_id, "cancelled_steps": len(steps)}
        await anyio.sleep(0.05)
    raise AssertionError(f"the cancelled run {run_id} was never retained")


async def raw(s: ClientSession, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request as JSON on the session's own connection, stamped like the SDK's own requests
    but not validated against a 2025-11-25 result shape (a task is not a CallToolResult; the
    SDK's result claims for tasks apply to the 2026 wire only)."""
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {}
    s._stamp(data, opts)
    return await s._dispatcher.send_raw_request(method, data.get("params"), opts)


async def task_run(s: ClientSession) -> dict[str, Any]:
    created = await raw(s, "tools/call", {"name": EXECUTE, "arguments": run_args(slow_loop(10, 50))})
    check(created.get("resultType") == "task", f"a task-augmented call answers with a task: {created}")
    task_id = created["taskId"]
    statuses = []
    for _ in range(400):
        got = await raw(s, "tasks/get", {"taskId": task_id})
        statuses.append(got["status"])
        if got["status"] != "working":
            break
        await anyio.sleep(got.get("pollIntervalMs", 250) / 1000)
    check(got["status"] == "completed", f"the task did not complete: {got}")
    out = got["result"]["structuredContent"]
    check(out["outcome"]["status"] == "success", f"the task's run did not succeed: {out}")
    check(out["run_id"] == created["_meta"][EXT]["run_id"], "the task's result is its run's")
    return {"task": task_id, "task_polls": len(statuses), "task_saw_working": "working" in statuses}


async def main(argv: list[str]) -> None:
    run_ids: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            meta = message.params.meta
            data = meta.model_dump(by_alias=True) if hasattr(meta, "model_dump") else (meta or {})
            run_id = (data.get(EXT) or {}).get("run_id")
            if run_id:
                run_ids.append(run_id)

    findings: dict[str, Any] = {"sdk": "python", "transport": argv[0]}
    async with session(argv, {EXT: {}}, on_message) as plain:
        findings |= await progress_run(plain)
        findings |= await cancelled_run(plain, run_ids)
    async with session(argv, {EXT: {}, TASKS: {}}) as tasked:
        findings |= await task_run(tasked)
    print(json.dumps(findings))


if __name__ == "__main__":
    try:
        anyio.run(main, sys.argv[1:])
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
