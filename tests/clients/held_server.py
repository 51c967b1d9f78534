"""A plain MCP server over stdio (the standard library only, no SDK) whose answers the test
steers, for `tests/it/gate_bounds.rs`: it shows which id each call reached it under, holds calls
unanswered until told, and writes as much as it is asked to.

    python3 held_server.py

One tool, `echo`, whose arguments say what to do:

- `{"hold": true}`: no answer until a call with `{"release": true}` arrives; that call's answer
  comes after every held call's, in the order they came.
- `{"flood": N, "size": B}`: N progress notifications (under the call's `progressToken`), each
  with a message of B bytes, then the answer.
- `{"answer_size": B}`: answered at once, with `"pad"`: B bytes beside `seen_id`.
- anything else: answered at once.

Every answer's `structuredContent` is `{"seen_id": <the request id as this server received it>}`.
Any other tool (the gate asks for `pilotage_manifest`) is a tool error: this is no Pilotage
server, so to the gate every call is a plain tool's.
"""

from __future__ import annotations

import json
import sys


def write(message: dict) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def answer(request_id, result: dict) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": result})


def seen(request_id, pad: int = 0) -> dict:
    structured = {"seen_id": request_id}
    if pad:
        structured["pad"] = "x" * pad
    return {"content": [{"type": "text", "text": "seen"}], "structuredContent": structured}


def main() -> None:
    held: list = []
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None or request_id is None:
            continue  # a notification, or an answer to nothing this server asked
        if method == "initialize":
            answer(request_id, {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "held", "version": "1"},
            })
        elif method == "ping":
            answer(request_id, {})
        elif method == "tools/list":
            answer(request_id, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
        elif method == "tools/call" and params.get("name") == "echo":
            arguments = params.get("arguments") or {}
            if arguments.get("hold"):
                held.append(request_id)
                continue
            if arguments.get("release"):
                for waiting in held:
                    answer(waiting, seen(waiting))
                held.clear()
            token = (params.get("_meta") or {}).get("progressToken")
            text = "x" * int(arguments.get("size", 0))
            for k in range(int(arguments.get("flood", 0))):
                write({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": token, "progress": k + 1, "message": text}})
            answer(request_id, seen(request_id, int(arguments.get("answer_size", 0))))
        elif method == "tools/call":
            answer(request_id, {"content": [{"type": "text", "text": "no such tool"}], "isError": True})
        else:
            write({"jsonrpc": "2.0", "id": request_id,
                   "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
