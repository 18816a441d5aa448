#!/usr/bin/env python3
"""A scripted Anthropic Messages API server for driving the real Claude Code CLI.

Python stdlib only; listens on 127.0.0.1 with an OS-chosen port, written to
--port-file once it is ready. Every request is appended to --log as one
JSON line {"method", "path", "headers", "key_ok", "body"}: the x-api-key and
authorization headers are replaced by "<redacted>", and key_ok says whether
the request carried --api-key (so a test can check the CLI used the key
without the key being written anywhere).

POST /v1/messages (any query string, e.g. ?beta=true) answers in the real
API's shapes: with "stream": true a Server-Sent-Events stream

  event: message_start        data: {"type": "message_start", "message": {...}}
  event: content_block_start  data: {"type": ..., "index": 0, "content_block": {...}}
  event: ping                 data: {"type": "ping"}
  event: content_block_delta  data: {... "delta": {"type": "text_delta" | "input_json_delta", ...}}
  event: content_block_stop   data: {"type": ..., "index": 0}
  event: message_delta        data: {... "delta": {"stop_reason": ...}, "usage": {...}}
  event: message_stop         data: {"type": "message_stop"}

and otherwise one message object. The scripted conversation: a request
whose messages carry a tool_result for the scripted tool_use gets
--final-message as text (stop_reason end_turn); a request that offers the
Bash tool gets one tool_use of Bash running --command (stop_reason
tool_use; with --iteration-pattern, a template: see scripted_server.py);
any other request (side queries the CLI makes without tools)
gets a short text answer. With --fail STATUS every POST /v1/messages is
answered with that HTTP status and the API's error body (529
overloaded_error, 500 api_error, 429 rate_limit_error, ...).

POST /v1/messages/count_tokens answers {"input_tokens": N}; any other path
is answered 404 with an API error body (and logged).
"""

import json
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from scripted_server import ScriptedHandler, arg_parser, command_for, serve, sse  # noqa: E402

TOOL_USE_ID = "toolu_gdnctl_01"
SECRET_HEADERS = ("x-api-key", "authorization", "proxy-authorization", "cookie")
ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def error_body(status, message):
    kind = ERRORS.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def tool_names(body):
    return [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]


def has_tool_result(body):
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if msg.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                if block.get("tool_use_id") == TOOL_USE_ID:
                    return True
    return False


def stream_events(msg):
    """The SSE events that build msg, as the real API sends them."""
    start = dict(msg, content=[], stop_reason=None, stop_sequence=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    events = [{"type": "message_start", "message": start}]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            events.append({"type": "ping"})
            events.append(
                {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}}
            )
        else:
            events.append(
                {"type": "content_block_start", "index": i, "content_block": dict(block, input={})}
            )
            args = json.dumps(block["input"])
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": part},
                    }
                )
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": msg["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events


class Handler(ScriptedHandler):
    server_version = "gdnctl-messages/1"

    def record(self, body):
        opts = self.server.opts
        headers = {}
        for k, v in self.headers.items():
            headers[k.lower()] = "<redacted>" if k.lower() in SECRET_HEADERS else v
        sent = self.headers.get("x-api-key") or ""
        auth = self.headers.get("authorization") or ""
        key_ok = bool(opts.api_key) and opts.api_key in (sent, auth[len("Bearer ") :])
        self.append_log({"method": self.command, "path": self.path, "headers": headers, "key_ok": key_ok, "body": body})

    def reply_headers(self):
        return [("request-id", "req_gdnctl_%d" % self.server.turns)]

    def reply_json(self, code, obj, extra=()):
        self.reply(code, "application/json", json.dumps(obj).encode(), extra)

    def do_GET(self):
        self.record(None)
        self.reply_json(404, error_body(404, "not found: %s" % self.path))

    def do_HEAD(self):
        self.record(None)
        self.reply(200, "text/plain", b"")

    def do_POST(self):
        body = self.read_body()
        self.record(body)
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            self.reply_json(200, {"input_tokens": 42})
            return
        if not path.endswith("/v1/messages"):
            self.reply_json(404, error_body(404, "not found: %s" % self.path))
            return
        opts = self.server.opts
        with self.server.lock:
            self.server.turns += 1
            n = self.server.turns
        if opts.fail:
            # x-should-retry: false asks SDK clients not to retry
            extra = [("x-should-retry", "false")] if opts.no_retry else []
            self.reply_json(opts.fail, error_body(opts.fail, opts.fail_message), extra)
            return
        command = command_for(opts, body.get("messages")) if "Bash" in tool_names(body) else None
        if has_tool_result(body):
            content = [{"type": "text", "text": opts.final_message}]
            stop = "end_turn"
        elif command is not None:
            content = [
                {"type": "text", "text": "I will edit hello.txt and commit."},
                {
                    "type": "tool_use",
                    "id": TOOL_USE_ID,
                    "name": "Bash",
                    "input": {"command": command, "description": "Edit hello.txt and commit"},
                },
            ]
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": "gdnctl test"}]
            stop = "end_turn"
        msg = {
            "id": "msg_gdnctl_%d" % n,
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-test",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
        if body.get("stream"):
            self.reply(200, "text/event-stream", sse(stream_events(msg)), [("Cache-Control", "no-cache")])
        else:
            self.reply_json(200, msg)


def main():
    ap = arg_parser(__doc__, "Bash")
    ap.add_argument("--api-key", default="", help="the key the client should send (never logged)")
    ap.add_argument("--fail", type=int, default=0, help="answer every POST /v1/messages with this status")
    ap.add_argument("--fail-message", default="Overloaded")
    ap.add_argument("--no-retry", action="store_true", help="send x-should-retry: false with --fail")
    serve(ap.parse_args(), Handler)


if __name__ == "__main__":
    main()
