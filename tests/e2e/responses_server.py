#!/usr/bin/env python3
"""A scripted OpenAI Responses API server for driving the real Codex CLI.

Python stdlib only; listens on 127.0.0.1 with an OS-chosen port, written to
--port-file once it is ready. Every request is appended to --log as one
JSON line ({"method", "path", "body"}).

POST .../responses answers with a Server-Sent-Events stream, in the shapes
codex's own tests use (codex-rs/core/tests/common/responses.rs):

  event: response.created            data: {"type": ..., "response": {"id": ...}}
  event: response.output_item.added  data: {"type": ..., "item": {...}}
  event: response.output_item.done   data: {"type": ..., "item": {...}}
  event: response.completed          data: {"type": ..., "response": {"id", "usage"}}

Every response's usage is the same: --usage INPUT,CACHED,OUTPUT,REASONING
(default 10 input and 5 output tokens, no details).

A new turn (no tool output in the request's input) gets one function call
to the shell tool that the request offers (exec_command, shell_command or
shell), running --command in the workspace (with --iteration-pattern, a
template: see scripted_server.py). A request that carries that
call's output gets a final assistant message (--final-message). Anything
else is answered 404 (and logged).
"""

import json
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from scripted_server import ScriptedHandler, arg_parser, command_for, serve, sse  # noqa: E402

CALL_ID = "call_gdnctl_1"


def tool_names(body):
    names = []
    for tool in body.get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            names.append(name)
        elif tool.get("type"):
            names.append(tool["type"])
    return names


def shell_call(body, command):
    """A function_call item for whichever shell tool the request offers."""
    names = tool_names(body)
    if "exec_command" in names:
        name, args = "exec_command", {"cmd": command, "yield_time_ms": 10000}
    elif "shell_command" in names:
        name, args = "shell_command", {"command": command, "timeout_ms": 10000}
    elif "shell" in names:
        name, args = "shell", {"command": ["bash", "-lc", command], "timeout_ms": 10000}
    else:
        return None
    return {
        "type": "function_call",
        "id": "fc_gdnctl_1",
        "call_id": CALL_ID,
        "name": name,
        "arguments": json.dumps(args),
        "status": "completed",
    }


def has_tool_output(body):
    for item in body.get("input") or []:
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            if item.get("call_id") == CALL_ID:
                return True
    return False


def completed(rid, usage):
    """response.completed with --usage INPUT,CACHED,OUTPUT,REASONING (the Responses API's
    convention: input_tokens include the cached ones, output_tokens the reasoning ones);
    by default 10 input and 5 output tokens without details."""
    inp, cached, out, reasoning = usage
    return {
        "type": "response.completed",
        "response": {
            "id": rid,
            "usage": {
                "input_tokens": inp,
                "input_tokens_details": {"cached_tokens": cached} if cached is not None else None,
                "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": reasoning} if reasoning is not None else None,
                "total_tokens": inp + out,
            },
        },
    }


def parse_usage(text):
    """--usage INPUT,CACHED,OUTPUT,REASONING -> a tuple of four counts."""
    parts = [int(x) for x in text.split(",")]
    if len(parts) != 4 or min(parts) < 0:
        raise ValueError("--usage wants INPUT,CACHED,OUTPUT,REASONING")
    return tuple(parts)


class Handler(ScriptedHandler):
    server_version = "gdnctl-responses/1"

    def record(self, body):
        self.append_log({"method": self.command, "path": self.path, "body": body})

    def do_GET(self):
        self.record(None)
        if self.path.split("?")[0].endswith("/models"):
            self.reply(200, "application/json", json.dumps({"object": "list", "data": [], "models": []}).encode())
        else:
            self.reply(404, "application/json", b'{"error": {"message": "not found"}}')

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        if not self.path.split("?")[0].endswith("/responses"):
            self.reply(404, "application/json", b'{"error": {"message": "not found"}}')
            return
        with self.server.lock:
            self.server.turns += 1
            rid = "resp_gdnctl_%d" % self.server.turns
        if has_tool_output(body):
            item = {
                "type": "message",
                "role": "assistant",
                "id": "msg_" + rid,
                "status": "completed",
                "content": [{"type": "output_text", "text": self.server.opts.final_message, "annotations": []}],
            }
        else:
            command = command_for(self.server.opts, body.get("input"))
            item = shell_call(body, command) if command is not None else None
            if item is None:
                why = "no shell tool offered" if command is not None else "no iteration in the request"
                sys.stderr.write("responses_server: %s: %r\n" % (why, tool_names(body)))
                item = {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_" + rid,
                    "content": [{"type": "output_text", "text": why}],
                }
        events = [
            {"type": "response.created", "response": {"id": rid}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            completed(rid, self.server.opts.usage),
        ]
        self.reply(200, "text/event-stream", sse(events))


def main():
    ap = arg_parser(__doc__, "codex")
    ap.add_argument(
        "--usage",
        type=parse_usage,
        default=(10, None, 5, None),
        help="INPUT,CACHED,OUTPUT,REASONING tokens of every response (default: 10 input, 5 output)",
    )
    opts = ap.parse_args()
    serve(opts, Handler)


if __name__ == "__main__":
    main()
