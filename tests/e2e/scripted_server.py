"""The plumbing shared by the scripted model servers (responses_server.py,
messages_server.py). Python stdlib only.

serve(opts, handler) listens on 127.0.0.1 with an OS-chosen port, written
to opts.port_file once it is ready; the handler sees self.server.opts, a
lock (self.server.lock) and a turn counter (self.server.turns).

With --iteration-pattern REGEX the tool call's command is a template:
{iteration} in --command is replaced by the first group of REGEX found in
the request's conversation (every string in its messages or input, e.g.
the rendered prompt's `# Demo hill-climb: iteration N of M`); a request
where REGEX finds nothing gets no tool call (command_for returns None).
Without it --command is used as is.
"""

import argparse
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sse(events):
    """A Server-Sent-Events body: one `event: TYPE` / `data: JSON` pair per event."""
    return "".join("event: %s\ndata: %s\n\n" % (ev["type"], json.dumps(ev)) for ev in events).encode()


def arg_parser(doc, runs_command):
    """The options every scripted server takes; runs_command: who runs --command."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--command", required=True, help="shell command the model asks %s to run" % runs_command)
    ap.add_argument("--final-message", default="Done: edited hello.txt and committed it.")
    ap.add_argument(
        "--iteration-pattern",
        default="",
        help="regex whose first group, found in the request's conversation, replaces {iteration} in --command",
    )
    return ap


def strings(obj):
    """Every string inside a decoded JSON value, depth first."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)


def command_for(opts, conversation):
    """The command of the tool call for a request whose conversation
    (messages / input) is given: --command, with {iteration} filled in when
    --iteration-pattern is set; None when the pattern is not found."""
    if not opts.iteration_pattern:
        return opts.command
    pattern = re.compile(opts.iteration_pattern, re.MULTILINE)
    for text in strings(conversation):
        m = pattern.search(text)
        if m:
            return opts.command.replace("{iteration}", m.group(1))
    return None


class ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def append_log(self, entry):
        with self.server.lock:
            with open(self.server.opts.log, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def reply_headers(self):
        """Headers every reply carries after Content-Type and Content-Length."""
        return []

    def reply(self, code, ctype, data, extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in list(self.reply_headers()) + list(extra):
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        """The request's JSON body ({} when empty, {"unparsed": text} when not JSON)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"unparsed": raw.decode("utf-8", "replace")}


def serve(opts, handler):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    srv.opts = opts
    srv.lock = threading.Lock()
    srv.turns = 0
    with open(opts.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(opts.port_file + ".tmp", opts.port_file)
    srv.serve_forever()
