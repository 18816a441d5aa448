#!/usr/bin/env python3
"""Loopback test server for gdnctl's hub clients (standard library only).

Two HTTP/1.1 servers on 127.0.0.1 with OS-chosen ports:

  hub  the Hugging Face Hub API (tree listing with Link pagination,
       /resolve/ with a redirect to the cdn for LFS files, 401 for private
       repositories without the token), the W&B GraphQL API (POST
       /graphql: runs, run, sampledHistory; a run's outputArtifacts, an
       artifact by name, an artifact's files, every one paginated) and
       the GCS JSON API (--gcs-root: object listing with nextPageToken,
       media downloads with Range, md5Hash; Bearer --gcs-token).
  cdn  serves LFS objects (/cdn/<sha256>/<name>), with Range support, and
       W&B artifact manifests and files through signed URLs
       (/wbmanifest/<id>?sig=, /wbfile/<id>/<name>?sig=): a request there
       that carries an Authorization header is refused with 400 and logged
       (the API key must never reach a signed URL on another host).

Repositories are directories: ROOT/<type>s/<owner>/<name>/<quoted revision>/...
where the revision directory is urllib.parse.quote(revision, safe="")
("main", "refs%2Fpr%2F1"), so a client that does not encode the revision
gets a 404.

Faults are set per repository path through the control endpoint:

  hubserver.py ctl PORTS_FILE fault PATH KIND [COUNT [ARG]]
  hubserver.py ctl PORTS_FILE reset

KIND (COUNT times, default 1; -1 = always):
  500        answer the resolve (or the tree page when PATH is "tree",
             the GraphQL request when PATH is "graphql") with HTTP 500
  429        answer with 429 and Retry-After: ARG (seconds, default 1)
  drop       send the headers and ARG bytes (default half) of the body,
             then close the connection
  stall      send the headers and ARG bytes (default half), then send
             nothing for 30 s
  badsha     serve the content with one byte changed
  lie-more   claim a Content-Length 1000 bytes too large, send the body, close
  lie-less   claim a Content-Length 100 bytes too small (send that much)
  norange    ignore Range and send the whole file with 200
  offhost    (PATH "tree") link the next listing page to the cdn host
  503        (GCS: PATH an object name, or "gcs-list") answer with 503
  404        (GCS: PATH an object name) answer its media download with 404,
             as if it was deleted after the listing

GCS (--gcs-root DIR): each directory of DIR is a bucket, its files the
objects. A bucket named "forbidden" answers 403. --gcs-synthetic
BUCKET/PREFIX:N adds N virtual objects PREFIX/fNNNNNNN.trace.json.gz (a
listing that big is what the interruption tests need).

W&B artifacts: a project in the --wandb file may have "artifacts": [{"id",
"name", "versionIndex", "type", "aliases": [..], "updatedAt", "run",
"files": [{"name", "src" (a file), "bad_digest": bool}]}].

Every request (but control ones) is logged as one JSON line
{"time", "server", "method", "path", "headers"[, "body"]} to --log, so tests can check
which headers reached which server.

  hubserver.py serve --root DIR --ports FILE --log FILE [--page-size N]
      [--lfs-min-size N] [--delay-ms N] [--cdn-host HOST] [--token T]
      [--private OWNER/NAME]... [--wandb FILE] [--wandb-key KEY]

The ports file is written (atomically) once both servers listen:
HUB_PORT=.. CDN_PORT=.. PID=.. lines, ready for `. FILE` in a shell.
"""
import argparse
import base64
import hashlib
import json
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {
    "faults": {},  # (path, kind) -> remaining count
    "sha": {},  # sha256 -> (repo path, fs path)
    "sha_cache": {},  # (fs path, size, mtime) -> sha256
}
ARGS = None
PORTS = {}
LOG = None


def log_request(server, handler, body=None):
    entry = {
        "time": time.time(),
        "server": server,
        "method": handler.command,
        "path": handler.path,
        "headers": {k: v for k, v in handler.headers.items()},
    }
    if body is not None:
        entry["body"] = body.decode("utf-8", "replace")
    with LOCK:
        LOG.write(json.dumps(entry) + "\n")
        LOG.flush()


def take_fault(path, *kinds):
    """The first of kinds set for path (decrementing its count), or None."""
    with LOCK:
        for kind in kinds:
            key = (path, kind)
            n = STATE["faults"].get(key)
            if n is None or n == 0:
                continue
            if n > 0:
                STATE["faults"][key] = n - 1
            return kind
    return None


def fault_arg(path, kind, default):
    with LOCK:
        return STATE.get("args", {}).get((path, kind), default)


def file_sha256(fs_path):
    st = os.stat(fs_path)
    key = (fs_path, st.st_size, st.st_mtime_ns)
    with LOCK:
        if key in STATE["sha_cache"]:
            return STATE["sha_cache"][key]
    h = hashlib.sha256()
    with open(fs_path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    with LOCK:
        STATE["sha_cache"][key] = digest
    return digest


def git_blob_oid(fs_path, size):
    if size > (1 << 20):
        return "0" * 40
    h = hashlib.sha1()
    h.update(b"blob %d\0" % size)
    with open(fs_path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def repo_dir(rtype, owner_name, rev_quoted):
    return os.path.join(ARGS.root, rtype, owner_name, rev_quoted)


def is_private(owner_name):
    return owner_name in (ARGS.private or [])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_name_tag = "hub"

    def log_message(self, fmt, *args):  # quiet
        pass

    # ---- helpers ----
    def send_json(self, status, obj, extra=None):
        self.send_body(status, json.dumps(obj).encode(), extra)

    def send_body(self, status, body, extra=None):
        """A JSON body already serialized."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def authorized_hf(self, owner_name):
        if not is_private(owner_name):
            return True
        return self.headers.get("Authorization") == "Bearer " + (ARGS.token or "")

    def delay(self):
        if ARGS.delay_ms:
            time.sleep(ARGS.delay_ms / 1000.0)

    # ---- dispatch ----
    def do_GET(self):
        if self.path.startswith("/_control"):
            return self.send_json(404, {"error": "POST only"})
        log_request(self.server_name_tag, self)
        self.delay()
        try:
            if self.server_name_tag == "cdn":
                if self.path.startswith("/wb"):
                    return self.wandb_signed()
                return self.cdn()
            path = self.path.split("?", 1)[0]
            if path.startswith("/storage/v1/b/"):
                return self.gcs_list()
            if path.startswith("/download/storage/v1/b/"):
                return self.gcs_media()
            if path.startswith("/api/"):
                return self.tree()
            if "/resolve/" in path:
                return self.resolve()
            return self.send_json(404, {"error": "not found"})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/_control"):
            return self.control(body)
        log_request(self.server_name_tag, self, body)
        if self.path.split("?", 1)[0] == "/graphql":
            return self.graphql(body)
        return self.send_json(404, {"error": "not found"})

    def control(self, body):
        req = json.loads(body or b"{}")
        with LOCK:
            if req.get("op") == "reset":
                STATE["faults"].clear()
                STATE["args"] = {}
            elif req.get("op") == "fault":
                key = (req["path"], req["kind"])
                STATE["faults"][key] = int(req.get("count", 1))
                if req.get("arg") is not None:
                    STATE.setdefault("args", {})[key] = req["arg"]
        self.send_json(200, {"ok": True})

    # ---- Hugging Face ----
    def tree(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.split("/")
        # /api/<type>s/<owner>/<name>/tree/<rev>[/<path>]
        if len(parts) < 7 or parts[5] != "tree":
            return self.send_json(404, {"error": "bad tree url"})
        rtype, owner_name, rev = parts[2], parts[3] + "/" + parts[4], parts[6]
        sub = urllib.parse.unquote("/".join(parts[7:]))
        if not self.authorized_hf(owner_name):
            return self.send_json(401, {"error": "Invalid credentials in Authorization header"})
        if take_fault("tree", "500"):
            return self.send_json(500, {"error": "Internal Error"})
        if take_fault("tree", "429"):
            return self.send_json(429, {"error": "slow down"},
                                  {"Retry-After": str(fault_arg("tree", "429", 1))})
        base = repo_dir(rtype, owner_name, rev)
        if not os.path.isdir(base):
            return self.send_json(404, {"error": "Revision Not Found"})
        q = urllib.parse.parse_qs(url.query)
        entries = []
        for dirpath, dirnames, filenames in os.walk(os.path.join(base, sub)):
            dirnames.sort()
            for d in dirnames:
                rel = os.path.relpath(os.path.join(dirpath, d), base)
                entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": rel})
            for fn in sorted(filenames):
                fs = os.path.join(dirpath, fn)
                rel = os.path.relpath(fs, base)
                size = os.path.getsize(fs)
                e = {"type": "file", "oid": git_blob_oid(fs, size), "size": size, "path": rel}
                if size >= ARGS.lfs_min_size:
                    sha = file_sha256(fs)
                    e["lfs"] = {"oid": sha, "size": size, "pointerSize": 134}
                    e["xetHash"] = "x" * 64
                    with LOCK:
                        STATE["sha"][sha] = (rel, fs)
                entries.append(e)
        entries.sort(key=lambda e: e["path"])
        start = int(q.get("cursor", ["0"])[0])
        page = entries[start:start + ARGS.page_size]
        extra = {}
        if start + ARGS.page_size < len(entries):
            query = "recursive=true&expand=false&cursor=%d" % (start + ARGS.page_size)
            nxt = url.path + "?" + query
            if take_fault("tree", "offhost"):
                nxt = "http://127.0.0.1:%d%s" % (PORTS["cdn"], nxt)
            elif (start // ARGS.page_size) % 2 == 0:
                nxt = "http://127.0.0.1:%d%s" % (PORTS["hub"], nxt)
            # odd pages: a relative link, resolved against the request URL
            extra["Link"] = '<%s>; rel="next"' % nxt
        self.send_json(200, page, extra)

    def resolve(self):
        raw = self.path.split("?", 1)[0]
        parts = raw.split("/")
        # /[datasets|spaces/]<owner>/<name>/resolve/<rev>/<path...>
        if parts[1] in ("datasets", "spaces"):
            rtype, rest = parts[1], parts[2:]
        else:
            rtype, rest = "models", parts[1:]
        if len(rest) < 5 or rest[2] != "resolve":
            return self.send_json(404, {"error": "bad resolve url"})
        owner_name, rev = rest[0] + "/" + rest[1], rest[3]
        rel = "/".join(urllib.parse.unquote(p) for p in rest[4:])
        if not self.authorized_hf(owner_name):
            return self.send_json(401, {"error": "Invalid credentials in Authorization header"})
        fs = os.path.join(repo_dir(rtype, owner_name, rev), rel)
        if ".." in rel.split("/") or not os.path.isfile(fs):
            return self.send_json(404, {"error": "Entry not found"})
        if take_fault(rel, "500"):
            return self.send_json(500, {"error": "Internal Error"})
        if take_fault(rel, "429"):
            return self.send_json(429, {"error": "Too Many Requests"},
                                  {"Retry-After": str(fault_arg(rel, "429", 1))})
        size = os.path.getsize(fs)
        if size >= ARGS.lfs_min_size:
            sha = file_sha256(fs)
            with LOCK:
                STATE["sha"][sha] = (rel, fs)
            loc = "http://%s:%d/cdn/%s/%s?sig=%s" % (
                ARGS.cdn_host, PORTS["cdn"], sha, urllib.parse.quote(os.path.basename(rel)),
                hashlib.md5(rel.encode()).hexdigest())
            self.send_response(302)
            self.send_header("Location", loc)
            self.send_header("X-Linked-Size", str(size))
            self.send_header("X-Linked-Etag", '"%s"' % sha)
            self.send_header("X-Repo-Commit", "1" * 40)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.serve_file(rel, fs)

    def cdn(self):
        parts = self.path.split("?", 1)[0].split("/")
        if len(parts) < 3 or parts[1] != "cdn":
            return self.send_json(404, {"error": "no such object"})
        with LOCK:
            found = STATE["sha"].get(parts[2])
        if not found:
            return self.send_json(404, {"error": "no such object"})
        self.serve_file(*found)

    def serve_file(self, rel, fs):
        size = os.path.getsize(fs)
        fault = take_fault(rel, "drop", "stall", "badsha", "lie-more", "lie-less", "norange")
        start = 0
        rng = self.headers.get("Range")
        if rng and fault != "norange":
            m = re.fullmatch(r"bytes=(\d+)-", rng.strip())
            if not m:
                return self.send_json(416, {"error": "bad range"})
            start = int(m.group(1))
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        count = size - start
        claimed = count
        if fault == "lie-more":
            claimed = count + 1000
        elif fault == "lie-less":
            claimed = max(0, count - 100)
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(claimed))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"%s"' % rel)
        self.end_headers()
        with open(fs, "rb") as f:
            if fault in ("drop", "stall"):
                n = int(fault_arg(rel, fault, count // 2))
                f.seek(start)
                self.wfile.write(f.read(min(n, count)))
                self.wfile.flush()
                if fault == "stall":
                    time.sleep(30)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault == "badsha":
                f.seek(start)
                data = bytearray(f.read(count))
                if data:
                    data[len(data) // 2] ^= 0xFF
                self.wfile.write(bytes(data))
                return
            if fault == "lie-less":
                f.seek(start)
                self.wfile.write(f.read(claimed))
                return
            self.connection.sendfile(f, start, count)
            if fault == "lie-more":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)

    # ---- GCS ----
    def gcs_error(self, code, message):
        return self.send_json(code, {"error": {"code": code, "message": message,
                                               "errors": [{"message": message}]}})

    def gcs_authorized(self):
        if not ARGS.gcs_token:
            return True
        return self.headers.get("Authorization") == "Bearer " + ARGS.gcs_token

    def gcs_objects(self, bucket, prefix):
        """Sorted [(name, fs path or None, synthetic index or None)]."""
        out = []
        base = os.path.join(ARGS.gcs_root or "/nonexistent", bucket)
        if os.path.isdir(base):
            for dirpath, dirnames, filenames in os.walk(base):
                for fn in filenames:
                    fs = os.path.join(dirpath, fn)
                    name = os.path.relpath(fs, base)
                    if name.startswith(prefix):
                        out.append((name, fs, None))
            if prefix.endswith("/") or prefix == "":
                out.append((prefix + "placeholder-dir/", None, None))
        key = (bucket, prefix)
        with LOCK:
            syn = STATE.setdefault("synthetic", {}).get(key)
        if syn is None:
            syn = []
            for spec in ARGS.gcs_synthetic or []:
                sb, _, rest = spec.partition("/")
                sp, _, n = rest.rpartition(":")
                if sb != bucket:
                    continue
                for i in range(int(n)):
                    name = "%s/f%07d.trace.json.gz" % (sp, i)
                    if name.startswith(prefix):
                        syn.append((name, None, i))
            syn.sort()
            with LOCK:
                STATE["synthetic"][key] = syn
        if not out:
            return syn  # sorted once, not again for each page (callers only read it)
        out.extend(syn)
        out.sort()
        return out

    def gcs_bucket_ok(self, bucket):
        if bucket == "forbidden":
            self.gcs_error(403, "caller does not have storage.objects.list access")
            return False
        exists = os.path.isdir(os.path.join(ARGS.gcs_root or "/nonexistent", bucket)) or any(
            sp.partition("/")[0] == bucket for sp in (ARGS.gcs_synthetic or []))
        if not exists:
            self.gcs_error(404, "The specified bucket does not exist.")
            return False
        return True

    def gcs_list(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.split("/")
        # /storage/v1/b/<bucket>/o
        if len(parts) != 6 or parts[5] != "o":
            return self.gcs_error(404, "Not Found")
        bucket = urllib.parse.unquote(parts[4])
        if not self.gcs_authorized():
            return self.gcs_error(401, "Invalid Credentials")
        if not self.gcs_bucket_ok(bucket):
            return
        if take_fault("gcs-list", "503", "500"):
            return self.gcs_error(503, "Backend Error")
        q = urllib.parse.parse_qs(url.query)
        prefix = q.get("prefix", [""])[0]
        objs = self.gcs_objects(bucket, prefix)
        start = int(base64.b64decode(q["pageToken"][0]).decode()) if "pageToken" in q else 0
        size = ARGS.gcs_page_size
        if any(sp.partition("/")[0] == bucket for sp in (ARGS.gcs_synthetic or [])):
            size = 5000  # a big synthetic listing: big pages, as the real API allows
        # a listing of synthetic objects only is the same every time: each page
        # is made once (a 200,000-object listing is listed several times)
        key = (bucket, prefix, start, size)
        with LOCK:
            cacheable = objs is STATE["synthetic"].get((bucket, prefix))  # gcs_objects' own
            body = STATE.setdefault("pages", {}).get(key) if cacheable else None
        if body is not None:
            return self.send_body(200, body)
        page = objs[start:start + size]
        items = []
        for name, fs, idx in page:
            if fs is None and idx is None:
                items.append({"kind": "storage#object", "name": name, "size": "0",
                              "md5Hash": base64.b64encode(hashlib.md5(b"").digest()).decode()})
                continue
            data = synthetic(idx) if fs is None else open(fs, "rb").read()
            items.append({"kind": "storage#object", "bucket": bucket, "name": name,
                          "size": str(len(data)),
                          "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode()})
        doc = {"kind": "storage#objects", "items": items}
        if start + size < len(objs):
            doc["nextPageToken"] = base64.b64encode(str(start + size).encode()).decode()
        body = json.dumps(doc).encode()
        if cacheable:
            with LOCK:
                STATE["pages"][key] = body
        self.send_body(200, body)

    def gcs_media(self):
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.split("/")
        # /download/storage/v1/b/<bucket>/o/<name, '/' as %2F>
        if len(parts) != 8 or parts[6] != "o" or url.query != "alt=media":
            return self.gcs_error(404, "Not Found (bad media URL: %s)" % url.path)
        bucket, name = urllib.parse.unquote(parts[5]), urllib.parse.unquote(parts[7])
        if not self.gcs_authorized():
            return self.gcs_error(401, "Invalid Credentials")
        if not self.gcs_bucket_ok(bucket):
            return
        if take_fault(name, "503"):
            return self.gcs_error(503, "Backend Error")
        if take_fault(name, "404"):
            return self.gcs_error(404, "No such object: %s/%s" % (bucket, name))
        m = re.fullmatch(r".*/f(\d{7})\.trace\.json\.gz", name)
        if m and not os.path.isfile(os.path.join(ARGS.gcs_root or "/nonexistent", bucket, name)):
            data = synthetic(int(m.group(1)))
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        fs = os.path.join(ARGS.gcs_root or "/nonexistent", bucket, name)
        if ".." in name.split("/") or not os.path.isfile(fs):
            return self.gcs_error(404, "No such object: %s/%s" % (bucket, name))
        self.serve_file(name, fs)

    # ---- W&B signed URLs (cdn) ----
    def wandb_signed(self):
        if "Authorization" in self.headers:
            with LOCK:
                LOG.write(json.dumps({"time": time.time(), "server": "cdn",
                                      "LEAK": self.headers["Authorization"] != "",
                                      "path": self.path}) + "\n")
                LOG.flush()
            return self.send_json(400, {"error": "credentials sent to a signed URL"})
        url = urllib.parse.urlsplit(self.path)
        if "sig=" not in url.query:
            return self.send_json(403, {"error": "unsigned"})
        parts = url.path.split("/")
        art = find_artifact(parts[2])
        if art is None:
            return self.send_json(404, {"error": "no such artifact"})
        if parts[1] == "wbmanifest":
            contents = {}
            for f in art["files"]:
                data = open(f["src"], "rb").read()
                digest = hashlib.md5(data).digest()
                if f.get("bad_digest"):
                    digest = hashlib.md5(data + b"x").digest()
                contents[f["name"]] = {"digest": base64.b64encode(digest).decode(),
                                       "size": len(data)}
            return self.send_json(200, {"version": 1, "storagePolicy": "wandb-storage-policy-v1",
                                        "contents": contents})
        name = urllib.parse.unquote("/".join(parts[3:]))
        f = next((f for f in art["files"] if f["name"] == name), None)
        if f is None:
            return self.send_json(404, {"error": "no such file"})
        self.serve_file(name, f["src"])

    # ---- W&B GraphQL ----
    def graphql_artifacts(self, query, var):
        db = load_wandb()
        cdn = "http://127.0.0.1:%d" % PORTS["cdn"]

        def node(a):
            return {"id": a["id"], "versionIndex": a.get("versionIndex", 0),
                    "updatedAt": a.get("updatedAt"), "createdAt": a.get("createdAt"),
                    "artifactType": {"name": a.get("type", "jax_profile")},
                    "artifactSequence": {"name": a["name"]},
                    "aliases": [{"alias": x} for x in a.get("aliases", [])],
                    "currentManifest": {"file": {
                        "directUrl": "%s/wbmanifest/%s?sig=s3cr3t" % (cdn, a["id"])}}}
        if "query ArtifactFiles(" in query:
            a = find_artifact(var.get("id"))
            if a is None:
                return self.send_json(200, {"data": {"artifact": None}})
            start = int(var.get("cursor") or 0)
            per = min(int(var.get("per") or 50), ARGS.wandb_files_page)
            page = a["files"][start:start + per]
            edges = [{"node": {"name": f["name"],
                               "directUrl": "%s/wbfile/%s/%s?sig=s3cr3t" % (
                                   cdn, a["id"], urllib.parse.quote(f["name"])),
                               "sizeBytes": os.path.getsize(f["src"]), "md5": None}}
                     for f in page]
            more = start + len(page) < len(a["files"])
            return self.send_json(200, {"data": {"artifact": {"files": {
                "edges": edges,
                "pageInfo": {"hasNextPage": more, "endCursor": str(start + len(page))}}}}})
        proj = db.get("%s/%s" % (var.get("entity"), var.get("project")))
        if proj is None:
            return self.send_json(200, {"data": {"project": None}})
        arts = proj.get("artifacts", [])
        if "query RunOutputArtifacts(" in query:
            if not any(r["name"] == var.get("name") for r in proj.get("runs", [])):
                return self.send_json(200, {"data": {"project": {"run": None}}})
            mine = [a for a in arts if a.get("run") == var.get("name")]
            start = int(var.get("cursor") or 0)
            per = min(int(var.get("per") or 50), 2)
            page = mine[start:start + per]
            more = start + len(page) < len(mine)
            return self.send_json(200, {"data": {"project": {"run": {"outputArtifacts": {
                "edges": [{"node": node(a)} for a in page],
                "pageInfo": {"hasNextPage": more, "endCursor": str(start + len(page))}}}}}})
        name, _, alias = var.get("name", "").partition(":")
        hit = [a for a in arts if a["name"] == name and
               (alias in a.get("aliases", []) or alias == "v%d" % a.get("versionIndex", 0))]
        return self.send_json(200, {"data": {"project": {
            "artifact": node(hit[0]) if hit else None}}})

    def graphql(self, body):
        if ARGS.wandb_key:
            want = "Basic " + base64.b64encode(("api:" + ARGS.wandb_key).encode()).decode()
            if self.headers.get("Authorization") != want:
                return self.send_json(401, {"errors": [{"message": "user is not logged in"}]})
        if take_fault("graphql", "500"):
            return self.send_json(500, {"error": "Internal Error"})
        if take_fault("graphql", "429"):
            return self.send_json(429, {"error": "slow down"},
                                  {"Retry-After": str(fault_arg("graphql", "429", 1))})
        req = json.loads(body)
        query, var = req.get("query", ""), req.get("variables") or {}
        if "Artifact" in query.split("(", 1)[0]:
            return self.graphql_artifacts(query, var)
        with open(ARGS.wandb) as f:
            db = json.load(f)
        proj = db.get("%s/%s" % (var.get("entity"), var.get("project")))
        if proj is None:
            return self.send_json(200, {"data": {"project": None}})
        runs = sorted(proj["runs"], key=lambda r: r.get("createdAt", ""), reverse=True)
        if "query Runs(" in query:
            filt = json.loads(var["filters"]) if var.get("filters") else None
            sel = [r for r in runs if filt is None or match_filter(r, filt)]
            start = int(var.get("cursor") or 0)
            page = sel[start:start + int(var["per"])]
            nodes = [{"node": run_node(r, False)} for r in page]
            more = start + len(page) < len(sel)
            return self.send_json(200, {"data": {"project": {"runs": {
                "edges": nodes,
                "pageInfo": {"hasNextPage": more, "endCursor": str(start + len(page))}}}}})
        run = next((r for r in runs if r["name"] == var.get("name")), None)
        if "query RunSampledHistory(" in query:
            if run is None:
                return self.send_json(200, {"data": {"project": {"run": None}}})
            out = []
            for spec_text in var["specs"]:
                spec = json.loads(spec_text)
                keys = [k for k in spec["keys"] if k != "_step"]
                lo = spec.get("minStep", float("-inf"))
                hi = spec.get("maxStep", float("inf"))
                rows = [{k: row[k] for k in ["_step"] + keys}
                        for row in run.get("history", [])
                        if all(k in row for k in keys) and lo <= row.get("_step", -1) < hi]
                out.append(rows[: spec.get("samples", 500)])
            text = json.dumps({"data": {"project": {"run": {"sampledHistory": out}}}})
            return self.send_raw_json(text)
        if "query Run(" in query:
            node = run_node(run, True) if run else None
            return self.send_json(200, {"data": {"project": {"run": node}}})
        return self.send_json(200, {"errors": [{"message": "unknown query"}], "data": None})

    def send_raw_json(self, text):
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def load_wandb():
    with open(ARGS.wandb) as f:
        return json.load(f)


def find_artifact(aid):
    for proj in load_wandb().values():
        for a in proj.get("artifacts", []):
            if a["id"] == aid:
                return a
    return None


def synthetic(i):
    """The bytes of synthetic GCS object i (deterministic, small)."""
    return ("synthetic object %d\n" % i).encode()


def run_node(r, with_summary):
    node = {"name": r["name"], "displayName": r.get("displayName"),
            "state": r.get("state", "finished"), "createdAt": r.get("createdAt")}
    if with_summary:
        node["summaryMetrics"] = r.get("summaryRaw", json.dumps(r.get("summary", {})))
    return node


FIELD = {"display_name": "displayName", "name": "name"}


def match_filter(run, f):
    for k, v in f.items():
        if k == "$or":
            if not any(match_filter(run, sub) for sub in v):
                return False
            continue
        val = run.get(FIELD.get(k, k)) or ""
        if isinstance(v, dict) and "$regex" in v:
            if not re.search(v["$regex"], val):
                return False
        elif val != v:
            return False
    return True


class CdnHandler(Handler):
    server_name_tag = "cdn"


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def serve(args):
    global ARGS, LOG
    ARGS = args
    LOG = open(args.log, "a")
    hub = Server(("127.0.0.1", 0), Handler)
    cdn = Server(("127.0.0.1", 0), CdnHandler)
    PORTS["hub"] = hub.server_address[1]
    PORTS["cdn"] = cdn.server_address[1]
    for s in (hub, cdn):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    tmp = args.ports + ".tmp"
    with open(tmp, "w") as f:
        f.write("HUB_PORT=%d\nCDN_PORT=%d\nPID=%d\n" % (PORTS["hub"], PORTS["cdn"], os.getpid()))
    os.rename(tmp, args.ports)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def ctl(args):
    ports = {}
    with open(args.ports) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            ports[k] = v
    if args.op == "reset":
        req = {"op": "reset"}
    else:
        req = {"op": "fault", "path": args.path, "kind": args.kind, "count": args.count,
               "arg": args.arg}
    data = json.dumps(req).encode()
    r = urllib.request.Request("http://127.0.0.1:%s/_control" % ports["HUB_PORT"], data=data,
                               method="POST")
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(r, timeout=10) as resp:
        resp.read()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--root", required=True)
    s.add_argument("--ports", required=True)
    s.add_argument("--log", required=True)
    s.add_argument("--page-size", type=int, default=3)
    s.add_argument("--lfs-min-size", type=int, default=100)
    s.add_argument("--delay-ms", type=int, default=0)
    s.add_argument("--cdn-host", default="localhost")
    s.add_argument("--token")
    s.add_argument("--private", action="append")
    s.add_argument("--wandb")
    s.add_argument("--wandb-key")
    s.add_argument("--wandb-files-page", type=int, default=2)
    s.add_argument("--gcs-root")
    s.add_argument("--gcs-token")
    s.add_argument("--gcs-page-size", type=int, default=2)
    s.add_argument("--gcs-synthetic", action="append")
    c = sub.add_parser("ctl")
    c.add_argument("ports")
    c.add_argument("op", choices=["fault", "reset"])
    c.add_argument("path", nargs="?")
    c.add_argument("kind", nargs="?")
    c.add_argument("count", nargs="?", type=int, default=1)
    c.add_argument("arg", nargs="?")
    args = p.parse_args()
    if args.cmd == "serve":
        serve(args)
    else:
        ctl(args)


if __name__ == "__main__":
    main()
