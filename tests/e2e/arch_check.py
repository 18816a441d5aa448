#!/usr/bin/env python3
"""The architecture checks of tests/e2e/t0004-architecture.sh (DESIGN.md sections 1, 3, 5).

    arch_check.py --root DIR --objdir DIR [--objdir DIR]... [--describe FILE]
                  [--known FILE] [--default-exceptions FILE] [--check NAME]...
                  [--cache DIR]

--root is a source tree (src/, include/gdnctl/); each --objdir holds the
object files of that tree as CMake lays them out (OBJDIR/src/loop/run.c.o
is the object of src/loop/run.c); --describe is the output of
`gdnctl help --json`; --cache keeps what nm and objdump found in each
object, by the object's content, for the next run. The checks:

  output    code outside src/cmd/ and src/main.c writes to stdout/stderr or exits
  spawn     fork/exec*/popen/system/posix_spawn, kill/wait* outside src/util/proc*.c
  layers    an include points up the layer order (or a header has no layer)
  cycle     source files call into each other (a strongly connected component of
            the file-level call graph; a call through a table of function pointers
            that one file fills counts as a call into that file)
  size      a file of src/loop over 800 lines, or a function there over 100
  events    a journal reader compares an event's name instead of switching on
            gdn_journal_event() (the one event table, src/loop/journal_events.c)
  defaults  an option's documented default differs from its initial value
  commands  the command table is not sorted

Each violation is one line "CHECK: FILE: WHAT", followed by indented detail
lines. A violation listed in --known (a temporary list that must shrink to
empty) is reported but tolerated; a listed one that no longer occurs is an
error, so the list cannot rot. Exit status 0 when nothing else was found,
1 otherwise, 2 on bad usage.
"""
import argparse
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys

# The layer order: a file may include headers of its own layer or below.
# Peers in one layer (config, repo, lint, trace, hub; report, doctor) must not
# include each other: the order is a partial one.
LAYERS = {
    "util": 0,
    "config": 1, "repo": 1, "lint": 1, "trace": 1, "hub": 1,
    "backend": 2,
    "loop": 3,
    "report": 4, "doctor": 4,
    "cmd": 5,
    "main": 6,
}

# Headers of include/gdnctl/ that define no symbol of their own (types,
# macros, inline helpers), so the module cannot be read from the objects.
# Every other header belongs to the module that defines most of the functions
# and variables it declares (see header_modules). A header that is in neither
# is an error: add it here.
HEADER_TABLE = {
    "banned.h": "util",    # poisoned names, included by compat.h
    "compat.h": "util",    # system headers, ARRAY_SIZE, BUG()
    "exitcode.h": "util",  # enum gdn_exit: codes shared by cmd/ and the loop's results
}

# Check "output": what a module below src/cmd/ may not reference. Writing to
# a FILE * it was given (fprintf, fputs, fwrite) is fine: only the standard
# streams and the functions that always use them are out, found in the
# undefined symbols of each object (so a macro cannot hide them) and in the
# source (so a reference compiled out of this build is caught too).
OUTPUT_SYMS = {
    "stdout", "stderr", "printf", "vprintf", "puts", "putchar", "perror", "psignal",
    "psiginfo", "__printf_chk", "__vprintf_chk", "err", "errx", "warn", "warnx", "verr",
    "verrx", "vwarn", "vwarnx", "error", "error_at_line",
}
EXIT_SYMS = {"exit", "_exit", "_Exit", "quick_exit", "abort", "__assert_fail"}
OUTPUT_SOURCE_RE = re.compile(
    r"\b(stdout|stderr|STDOUT_FILENO|STDERR_FILENO)\b"
    r"|\b(write|dprintf|vdprintf)\s*\(\s*[12]\s*,"
    r"|(?<![\w.>])(printf|vprintf|puts|putchar|perror|psignal|psiginfo|exit|_exit|_Exit|quick_exit"
    r"|abort|assert)\s*\(")
# The allowed exceptions, by file and name:
OUTPUT_ALLOWED = {
    # BUG() prints the broken invariant and aborts; xmalloc aborts on
    # allocation failure (DESIGN.md section 3): both end the process on
    # purpose, from any layer.
    "src/util/xalloc.c": {"abort", "stderr"},
    # _exit: the child between fork and exec when exec fails (it must not run
    # atexit handlers or flush stdio); stderr: the GDNCTL_TRACE=1 spawn log
    # (DESIGN.md section 5); STDOUT/STDERR_FILENO: dup2 of the child's pipe.
    "src/util/proc.c": {"_exit", "stderr", "STDOUT_FILENO", "STDERR_FILENO"},
}

# Check "spawn": only src/util/proc*.c starts programs, and it is the one
# place that controls them (issue 12: signals to process groups and waits).
SPAWN_SYMS = {
    "fork", "vfork", "clone", "clone3", "execl", "execlp", "execle", "execv", "execvp", "execve",
    "execvpe", "fexecve", "popen", "system", "posix_spawn", "posix_spawnp",
    "kill", "killpg", "waitpid", "wait", "wait3", "wait4", "waitid",
}
# (?<![\w.>]): a call, not a member (a backend's ops->wait()).
SPAWN_SOURCE_RE = re.compile(
    r"(?<![\w.>])(fork|vfork|clone|popen|system|posix_spawnp?|exec(?:l|lp|le|v|vp|ve|vpe)"
    r"|fexecve|kill|killpg|waitpid|wait|wait3|wait4|waitid)\s*\(")
SPAWN_ALLOWED = "src/util/proc*.c"
# banned.h names system() and popen() to make them compile errors.
SPAWN_SOURCE_ALLOWED = {"include/gdnctl/banned.h"}


class Report:
    def __init__(self):
        self.found = {}  # key -> detail lines

    def add(self, key, *details):
        self.found.setdefault(key, [])
        for d in details:
            if d not in self.found[key]:
                self.found[key].append(d)


# What strip_c looks for: a comment's or a literal's first characters; and
# the inside of a literal up to its closing quote or the end of the line (a
# backslash takes the next character with it, a line break too).
STRIP_START_RE = re.compile(r"/\*|//|[\"']")
STRIP_LITERAL_RE = {q: re.compile(r"(?:\\(?:.|\Z)|[^\\\n%s])*" % q, re.S) for q in "\"'"}


def strip_c(text):
    """Blank out comments and string/char literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        m = STRIP_START_RE.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        i, c = m.start(), m.group()
        if c == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            j = min(STRIP_LITERAL_RE[c].match(text, i + 1).end() + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
    return "".join(out)


def rel(root, path):
    return os.path.relpath(path, root).replace(os.sep, "/")


def sources(root):
    """Every .c and .h under src/ and include/gdnctl/, relative to root, sorted."""
    found = []
    for top in ("src", "include/gdnctl"):
        for d, _, files in os.walk(os.path.join(root, top)):
            found += [rel(root, os.path.join(d, f)) for f in files if f.endswith((".c", ".h"))]
    return sorted(found)


def src_module(path):
    """The module of a file under src/: its directory; src/main.c is "main"."""
    parts = path.split("/")
    if parts[0] != "src":
        return None
    return "main" if len(parts) == 2 else parts[1]


def below_cmd(path, headers):
    mod = headers.get(path) if path.startswith("include/") else src_module(path)
    return mod not in ("cmd", "main")


# --- objects ---------------------------------------------------------------------------------


def tool_output(argv, paths):
    """{object path: its lines of output} of one `nm` or `objdump` run over many objects."""
    res = subprocess.run(argv + paths, capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"arch_check: {argv[0]}: {res.stderr.strip()}")
    per, cur = {p: [] for p in paths}, None
    for line in res.stdout.splitlines():
        # nm: "\nPATH:"; objdump: "\nPATH:     file format elf64-x86-64"
        m = re.match(r"^(\S.*?):(\s+file format .*)?$", line)
        if m and m.group(1) in per:
            cur = m.group(1)
        elif cur and line.strip():
            per[cur].append(line)
    return per


def code_refs(lines):
    """The symbols an object's code (.text sections) refers to, from its relocations."""
    refs, in_text = set(), False
    for line in lines:
        m = re.match(r"RELOCATION RECORDS FOR \[([^\]]+)\]", line)
        if m:
            in_text = m.group(1).startswith(".text")
            continue
        parts = line.split()
        if in_text and len(parts) == 3 and re.fullmatch(r"[0-9a-fA-F]+", parts[0]):
            refs.add(re.split(r"[-+]0x", parts[2])[0])
    return refs


def load_objects(objdirs, cache=None):
    """{source path: (defined globals, undefined symbols, symbols its code refers to)}.

    With a cache directory, an object whose content was read before is not
    read again: one file per object, named by the SHA-256 of its bytes."""
    paths = {}
    for od in objdirs:
        for d, _, files in os.walk(od):
            for f in sorted(files):
                if f.endswith((".c.o", ".c.obj")):
                    path = os.path.join(d, f)
                    src = rel(od, path).rsplit(".", 1)[0]
                    if src.startswith("src/"):
                        paths[path] = src
    if not paths:
        return {}
    objs, cached = {}, {}
    if cache:
        os.makedirs(cache, exist_ok=True)
        for path in paths:
            with open(path, "rb") as f:
                cached[path] = os.path.join(cache, hashlib.sha256(f.read()).hexdigest())
            try:
                with open(cached[path]) as f:
                    objs[paths[path]] = tuple(set(x) for x in json.load(f))
            except FileNotFoundError:
                pass
    names = sorted(p for p in paths if paths[p] not in objs)
    if not names:
        return objs
    # With several objects, nm and objdump name each one before its lines.
    if len(names) == 1:
        names.append(names[0])
    defined = tool_output(["nm", "--defined-only", "--extern-only"], names)
    undef = tool_output(["nm", "--undefined-only"], names)
    relocs = tool_output(["objdump", "-r"], names)
    for path in names:
        src = paths[path]
        objs[src] = ({p[2] for p in (line.split() for line in defined[path]) if len(p) == 3},
                     {line.split()[-1] for line in undef[path]},
                     code_refs(relocs[path]))
        if cache:
            tmp = f"{cached[path]}.{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump([sorted(x) for x in objs[src]], f)
            os.replace(tmp, cached[path])
    return objs


# --- checks ----------------------------------------------------------------------------------


def check_output(root, objs, headers, rep):
    for src, (_, undef, _) in sorted(objs.items()):
        if not below_cmd(src, headers):
            continue
        allowed = OUTPUT_ALLOWED.get(src, set())
        for sym in sorted(undef & (OUTPUT_SYMS | EXIT_SYMS) - allowed):
            what = "exits" if sym in EXIT_SYMS else "writes to the terminal"
            rep.add(f"output: {src}: {sym}", f"{what}: the object references '{sym}' (nm -u)")
    for src in sources(root):
        if not below_cmd(src, headers):
            continue
        allowed = OUTPUT_ALLOWED.get(src, set())
        raw = open(os.path.join(root, src), errors="replace").read()
        lines = raw.splitlines()
        for no, line in enumerate(strip_c(raw).splitlines(), 1):
            for m in OUTPUT_SOURCE_RE.finditer(line):
                if m.group(2):
                    name = f"{m.group(2)}({m.group(0)[-2]}"
                else:
                    name = m.group(1) or m.group(3)
                if (m.group(1) or m.group(2) or m.group(3)) in allowed:
                    continue
                rep.add(f"output: {src}: {name}", f"{src}:{no}: {lines[no - 1].strip()}")


def check_spawn(root, objs, rep):
    def allowed(src):
        return fnmatch.fnmatchcase(src, SPAWN_ALLOWED)

    for src, (_, undef, _) in sorted(objs.items()):
        if allowed(src):
            continue
        for sym in sorted(undef & SPAWN_SYMS):
            rep.add(f"spawn: {src}: {sym}",
                    f"only {SPAWN_ALLOWED} starts, signals and waits for programs "
                    f"(the object references '{sym}')")
    for src in sources(root):
        if allowed(src) or src in SPAWN_SOURCE_ALLOWED:
            continue
        raw = open(os.path.join(root, src), errors="replace").read()
        lines = raw.splitlines()
        for no, line in enumerate(strip_c(raw).splitlines(), 1):
            for m in SPAWN_SOURCE_RE.finditer(line):
                rep.add(f"spawn: {src}: {m.group(1)}", f"{src}:{no}: {lines[no - 1].strip()}")


DECL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\(|\[|;)")


def header_modules(root, objs, rep):
    """{"include/gdnctl/x.h": module} from HEADER_TABLE and the objects' definitions."""
    where = {}
    for src, (defined, _, _) in objs.items():
        for sym in defined:
            where.setdefault(sym, set()).add(src_module(src))
    heads = {}
    hdir = os.path.join(root, "include/gdnctl")
    for name in sorted(os.listdir(hdir)):
        if not name.endswith(".h"):
            continue
        path = f"include/gdnctl/{name}"
        text = strip_c(open(os.path.join(hdir, name), errors="replace").read())
        counts = {}
        for ident in set(DECL_RE.findall(text)):
            for mod in where.get(ident, ()):
                counts[mod] = counts.get(mod, 0) + 1
        best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if name in HEADER_TABLE:
            heads[path] = HEADER_TABLE[name]
        elif best and (len(best) == 1 or best[0][1] > best[1][1]):
            heads[path] = best[0][0]
        else:
            rep.add(f"layers: {path}: no layer",
                    "the header defines no symbol of one module: add it to HEADER_TABLE in "
                    "tests/e2e/arch_check.py",
                    f"symbols found per module: {counts or 'none'}")
    return heads


INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


# The option table (gdnctl/opt.h, struct opt) stays in src/cmd/: these modules
# receive parsed values (issue 26: the loop's setup gets struct gdn_loop_setup's
# values and the names given, from src/cmd/loop_options.c).
NO_OPTION_TABLE = {"loop"}
OPTION_TABLE_RE = re.compile(r"\bstruct\s+opt\b")


def check_layers(root, headers, rep):
    for src in sources(root):
        mod = headers.get(src) if src.startswith("include/") else src_module(src)
        if mod is None:
            continue
        if mod in NO_OPTION_TABLE:
            raw = open(os.path.join(root, src), errors="replace").read()
            found = [m.group(1) for m in INCLUDE_RE.finditer(raw) if m.group(1) == "gdnctl/opt.h"]
            found += ["struct opt"] if OPTION_TABLE_RE.search(strip_c(raw)) else []
            for what in found:
                rep.add(f"layers: {src}: {what}",
                        f"the option table stays in src/cmd/: {mod} receives parsed values")
        if mod not in LAYERS:
            rep.add(f"layers: {src}: unknown module '{mod}'",
                    "add the module to LAYERS in tests/e2e/arch_check.py")
            continue
        text = open(os.path.join(root, src), errors="replace").read()
        for m in INCLUDE_RE.finditer(text):
            inc = m.group(1)
            target = f"include/{inc}" if inc.startswith("gdnctl/") else \
                rel(root, os.path.join(root, os.path.dirname(src), inc))
            tmod = headers.get(target) if target.startswith("include/") else src_module(target)
            if tmod is None or tmod == mod or tmod not in LAYERS:
                continue
            no = text.count("\n", 0, m.start()) + 1
            if target.startswith("src/"):
                rep.add(f"layers: {src}: includes {inc}",
                        f"{src}:{no}: {target} is private to src/{tmod}/; use include/gdnctl/")
            elif LAYERS[tmod] >= LAYERS[mod]:
                rep.add(f"layers: {src}: includes {inc}",
                        f"{src}:{no}: {mod} (layer {LAYERS[mod]}) includes a header of "
                        f"{tmod} (layer {LAYERS[tmod]}); the order is util < config, repo, lint, "
                        "trace, hub < backend < loop < report, doctor < cmd < main")


STRUCT_RE = re.compile(r"\bstruct\s+(\w+)\s*\{")
FNPTR_RE = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")
# struct T NAME = {   struct T NAME[] = {   (static, const and array sizes allowed)
FILL_RE = re.compile(r"\bstruct\s+(\w+)\s+(?:const\s+)?\*?\s*(?:const\s+)?(\w+)\s*"
                     r"(?:\[[^\]]*\]\s*)?=\s*\{")


def matching_brace(text, i):
    """The index just past the brace that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if not depth:
                return j + 1
    return len(text)


def table_edges(root):
    """{(caller, filler): {"T.member", ...}}: calls through a table of function pointers.

    A table is a struct with function-pointer members declared under src/ (a
    module's private header or a .c file: a struct of include/gdnctl/ is the
    callback interface a module declares, such as the HTTP client's hooks or
    the gate's journal sink, and any caller may fill it). When it is filled (an
    initialised variable of its type) in exactly one source file F, each call
    through one of its members (->m( or .m() from another file G of the same
    directory that sees the struct (G or a header it includes names it) is an
    edge G -> F: the caller calls back into the file that filled the table, as
    surely as through a symbol. A table filled in several files (the backend,
    agent and metric drivers) has several implementations: a plug-in, no edge.
    """
    raws = {src: open(os.path.join(root, src), errors="replace").read() for src in sources(root)}
    texts = {src: strip_c(raw) for src, raw in raws.items()}
    members = {}  # struct -> its function-pointer members
    for src, text in texts.items():
        if not src.startswith("src/"):
            continue
        for m in STRUCT_RE.finditer(text):
            body = text[m.end() - 1:matching_brace(text, m.end() - 1)]
            fns = set(FNPTR_RE.findall(body))
            if fns:
                members.setdefault(m.group(1), set()).update(fns)
    fillers = {}
    for src, text in texts.items():
        if src.endswith(".c"):
            for m in FILL_RE.finditer(text):
                if m.group(1) in members:
                    fillers.setdefault(m.group(1), set()).add(src)
    edges = {}
    for src, text in texts.items():
        if not src.endswith(".c"):
            continue
        seen = text
        for m in INCLUDE_RE.finditer(raws[src]):
            inc = m.group(1)
            path = f"include/{inc}" if inc.startswith("gdnctl/") else \
                rel(root, os.path.join(root, os.path.dirname(src), inc))
            seen += texts.get(path, "")
        for t, files in fillers.items():
            if len(files) != 1:
                continue
            (filler,) = files
            if filler == src or os.path.dirname(filler) != os.path.dirname(src) or \
                    not re.search(rf"\bstruct\s+{t}\b", seen):
                continue
            for fn in sorted(members[t]):
                if re.search(rf"(?:->|\.)\s*{fn}\s*\(", text):
                    edges.setdefault((src, filler), set()).add(f"{t}.{fn}")
    return edges


def strongly_connected(nodes, succ):
    """The strongly connected components of the graph (Tarjan), each a sorted list."""
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(sorted(comp))

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * len(nodes) + 100))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    sys.setrecursionlimit(old)
    return comps


def check_cycles(root, objs, rep):
    owner = {}
    for src, (defined, _, _) in objs.items():
        for sym in defined:
            owner.setdefault(sym, src)
    # A calls into B when A's code refers to a symbol B defines. References
    # from data do not count: a registry (the command table, the backend and
    # agent driver tables) names its entries, and the entries may call the
    # registry's helpers; that is a plug-in, not two files calling each other.
    uses = {}
    for src, (_, undef, refs) in objs.items():
        for sym in undef & refs:
            dst = owner.get(sym)
            if dst and dst != src:
                uses.setdefault((src, dst), set()).add(sym)
    # A call through a table of function pointers that has one implementation
    # is a call into the file that filled it (table_edges).
    through = table_edges(root) if root else {}
    for (a, b), what in through.items():
        uses.setdefault((a, b), set()).update(f"{w} (through the table)" for w in what)
    # A cycle is a strongly connected component of the file-level call graph:
    # files that reach each other, in two steps or in ten.
    succ = {}
    for a, b in uses:
        succ.setdefault(a, set()).add(b)
    nodes = {n for edge in uses for n in edge}
    for comp in strongly_connected(nodes, succ):
        if len(comp) < 2:
            continue
        inside = set(comp)
        rep.add(f"cycle: {' <-> '.join(comp)}",
                *(f"{a} calls {', '.join(sorted(uses[(a, b)]))}" +
                  ("" if len(comp) == 2 else f" (in {b})")
                  for a in comp for b in comp if (a, b) in uses and b in inside))


# Check "size": files and functions too big to read, per directory: (lines per
# file, lines per function). A function counts from the line of its name to
# its closing brace.
SIZE_LIMITS = {"src/loop": (800, 100)}
FUNC_NAME_RE = re.compile(r"(\w+)\s*\(")


def functions(text):
    """[(name, first line, number of lines)] of the function definitions of C source text."""
    lines = strip_c(text).split("\n")
    found, depth, start = [], 0, None
    for no, line in enumerate(lines, 1):
        for ch in line:
            if ch == "{":
                if not depth:
                    start = no
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
                if not depth and start is not None:
                    # the definition starts at the last line before the brace
                    # that begins in column 0 (clang-format's layout)
                    head = start
                    while head > 1 and not re.match(r"\w", lines[head - 1]):
                        head -= 1
                    text_head = lines[head - 1]
                    m = FUNC_NAME_RE.search(text_head)
                    if m and "=" not in text_head.split("(")[0] and \
                            not re.match(r"\s*(struct|union|enum)\b[^(]*$", text_head):
                        found.append((m.group(1), head, no - head + 1))
                    start = None
    return found


def check_size(root, rep):
    for src in sources(root):
        limits = [v for d, v in SIZE_LIMITS.items() if src.startswith(d + "/")]
        if not limits:
            continue
        max_file, max_fn = limits[0]
        text = open(os.path.join(root, src), errors="replace").read()
        n = text.count("\n")
        if n > max_file:
            rep.add(f"size: {src}: over {max_file} lines",
                    f"{src} has {n} lines: split it into files named for what they hold")
        if src.endswith(".c"):
            for name, line, length in functions(text):
                if length > max_fn:
                    rep.add(f"size: {src}: {name} over {max_fn} lines",
                            f"{src}:{line}: {name} has {length} lines")


DURATION_RE = re.compile(r"(\d+)(ms|s|m|h)?")
UNIT_MS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000}


def parse_default(kind, text):
    """The documented default as a value of the option's type; None when it is prose."""
    t = text.strip()
    try:
        if kind == "bool":
            return {"on": True, "true": True, "yes": True, "off": False, "false": False,
                    "no": False}[t.lower()]
        if kind == "int":
            return int(t, 10)
        if kind in ("float", "seconds", "minutes"):
            return float(t)  # seconds, minutes: a plain number is in the option's unit
        if kind == "duration":
            if re.fullmatch(r"\d+", t):
                return int(t) * 1000  # a bare number is seconds (opt.h)
            parts = DURATION_RE.findall(t)
            if not parts or "".join(n + u for n, u in parts) != t or \
                    any(not u for _, u in parts):
                return None
            return sum(int(n) * UNIT_MS[u] for n, u in parts)
    except (KeyError, ValueError):
        return None
    return t  # string, choice: the text is the value


def load_exceptions(path):
    """[(command glob, option glob)] of 'COMMAND OPTION: reason' lines."""
    rules = []
    if not path:
        return rules
    for no, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        head, sep, reason = line.partition(":")
        words = head.split()
        if not sep or not reason.strip() or len(words) < 2:
            sys.exit(f"arch_check: {path}:{no}: expected 'COMMAND OPTION: reason'")
        rules.append((" ".join(words[:-1]), words[-1], [False]))
    return rules


def check_defaults(describe, exceptions_path, rep):
    doc = json.load(open(describe))
    rules = load_exceptions(exceptions_path)

    def excepted(cmd, opt):
        for cglob, oglob, used in rules:
            if fnmatch.fnmatchcase(cmd, cglob) and fnmatch.fnmatchcase(opt, oglob):
                used[0] = True
                return True
        return False

    def walk(cmd, d):
        for o in d.get("options") or []:
            kind, name, dflt = o["type"], o["long"] or o["short"], o["default"]
            if kind in ("list", "kv", "group"):
                continue
            if "initial" not in o:
                rep.add(f"defaults: {cmd} --{name}: no initial value in describe mode",
                        "gdnctl help --json gives no \"initial\" for this option type")
                continue
            init = o["initial"]
            if dflt is None:
                # Nothing documented: the option must start off, empty or unset
                # (a negative number is the "not given" sentinel of int options).
                ok = init in (None, False, 0) or (kind in ("int", "duration") and init < 0)
                why = "an undocumented default"
            elif init is None and kind in ("string", "choice"):
                ok = False  # resolved after parsing (configuration, other options)
                why = "the value is set after parsing"
            else:
                want = parse_default(kind, dflt)
                ok = want is not None and want == init
                why = "the documented default is prose" if want is None else "they differ"
            if not ok and not excepted(cmd, name):
                rep.add(f"defaults: {cmd} --{name}: documented {json.dumps(dflt)}, "
                        f"initial {json.dumps(init)}",
                        f"{why}: initialise the variable to the documented default, or list "
                        "the option with a reason in tests/e2e/arch-default-exceptions.txt")

    by_name = {c["name"]: c for c in doc["commands"]}
    for c in doc["commands"]:
        target = by_name.get(c.get("alias_of"))
        if target and target.get("options") == c.get("options"):
            continue  # an alias of the same table
        walk(c["name"], c)
        for s in c.get("subcommands") or []:
            walk(f"{c['name']} {s['name']}", s)
    for cglob, oglob, used in rules:
        if not used[0]:
            rep.add(f"defaults: exception '{cglob} {oglob}' matches no option needing one",
                    "remove it from tests/e2e/arch-default-exceptions.txt")


TABLE_RE = re.compile(r"\bgdn_commands\s*\[\s*\]\s*=\s*\{")


def check_commands(root, rep):
    tables = []
    for src in sources(root):
        if not src.endswith(".c"):
            continue
        text = open(os.path.join(root, src), errors="replace").read()
        m = TABLE_RE.search(text)
        if m:
            body = text[m.end():text.find("};", m.end())]
            tables.append((src, re.findall(r'\{\s*"([^"]*)"', body)))
    if len(tables) != 1 or len(tables[0][1]) < 2:
        rep.add("commands: src/: no command table",
                f"expected one 'gdn_commands[] = {{' with entries, found {len(tables)}")
        return
    src, names = tables[0]
    for a, b in zip(names, names[1:]):
        if a.encode() >= b.encode():
            rep.add(f"commands: {src}: '{a}' before '{b}'",
                    "the command table is sorted by name (strcmp order), without duplicates")


# Check "events": the journal's readers switch on gdn_journal_event() of a
# line's name (src/loop/journal_events.c), never compare the name itself.
EVENT_TABLE = "src/loop/journal_events.c"
EVENT_ROW_RE = re.compile(r'\]\s*=\s*\{\s*"([a-z_]+)"')
EVENT_CMP_RE = re.compile(r'\bstrn?cmp\s*\(\s*(?:ev|event|name)\s*,\s*"([a-z_]+)"')


def check_events(root, rep):
    path = os.path.join(root, EVENT_TABLE)
    names = set(EVENT_ROW_RE.findall(open(path).read())) if os.path.exists(path) else set()
    if not names:
        rep.add(f"events: {EVENT_TABLE}: no event table",
                "expected rows '[GDN_EV_X] = {\"name\", ...}'")
        return
    for src in sources(root):
        if src == EVENT_TABLE:
            continue
        raw = open(os.path.join(root, src), errors="replace").read()
        for m in EVENT_CMP_RE.finditer(raw):
            if m.group(1) in names or any(n.startswith(m.group(1)) for n in names):
                no = raw.count("\n", 0, m.start()) + 1
                rep.add(f"events: {src}: compares an event name with \"{m.group(1)}\"",
                        f"{src}:{no}: switch on gdn_journal_event() (journal.h) instead")


# --- main ------------------------------------------------------------------------------------

CHECKS = ("output", "spawn", "layers", "cycle", "size", "events", "defaults", "commands")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--objdir", action="append", default=[])
    ap.add_argument("--describe")
    ap.add_argument("--known")
    ap.add_argument("--default-exceptions")
    ap.add_argument("--check", action="append", choices=CHECKS)
    ap.add_argument("--cache")
    a = ap.parse_args()
    checks = a.check or CHECKS
    rep = Report()

    # size, events, defaults and commands read only the sources
    objs = (load_objects(a.objdir, a.cache)
            if set(checks) & {"output", "spawn", "layers", "cycle"} else {})
    if not objs and set(checks) & {"output", "spawn", "layers", "cycle"}:
        ap.error("no object files (src/**/*.c.o) under --objdir")
    headers = header_modules(a.root, objs, rep) if set(checks) & {"output", "layers"} else {}
    if "output" in checks:
        check_output(a.root, objs, headers, rep)
    if "spawn" in checks:
        check_spawn(a.root, objs, rep)
    if "layers" in checks:
        check_layers(a.root, headers, rep)
    if "cycle" in checks:
        check_cycles(a.root, objs, rep)
    if "size" in checks:
        check_size(a.root, rep)
    if "events" in checks:
        check_events(a.root, rep)
    if "defaults" in checks:
        if not a.describe:
            ap.error("the defaults check needs --describe")
        check_defaults(a.describe, a.default_exceptions, rep)
    if "commands" in checks:
        check_commands(a.root, rep)

    known = []
    if a.known:
        known = [line.strip() for line in open(a.known)
                 if line.strip() and not line.lstrip().startswith("#")]
    bad = 0
    for key, details in sorted(rep.found.items()):
        tolerated = key in known
        bad += not tolerated
        print(f"{'known' if tolerated else 'VIOLATION'}: {key}")
        for d in details:
            print(f"    {d}")
    for key in known:
        if key.split(":", 1)[0] in checks and key not in rep.found:
            bad += 1
            print(f"FIXED: {key}\n    no longer occurs: remove it from {a.known}")
    print(f"# {len(rep.found)} violations, {bad} not in the known list or fixed"
          if rep.found or bad else "# no violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
