#!/usr/bin/env python3
"""The architecture checks of tests/e2e/t0004-architecture.sh (DESIGN.md sections 1, 3, 5).

    arch_check.py --root DIR --objdir DIR [--objdir DIR]... [--describe FILE]
                  [--known FILE] [--default-exceptions FILE] [--check NAME]...

--root is a source tree (src/, include/gdnctl/); each --objdir holds the
object files of that tree as CMake lays them out (OBJDIR/src/loop/engine.c.o
is the object of src/loop/engine.c); --describe is the output of
`gdnctl help --json`. The checks:

  output    code outside src/cmd/ and src/main.c writes to stdout/stderr or exits
  spawn     fork/exec*/popen/system/posix_spawn, kill/wait* outside src/util/proc*.c
  layers    an include points up the layer order (or a header has no layer)
  cycle     two source files call into each other
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


def strip_c(text):
    """Blank out comments and string/char literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
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


def load_objects(objdirs):
    """{source path: (defined globals, undefined symbols, symbols its code refers to)}."""
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
    names = sorted(paths)
    # With several objects, nm and objdump name each one before its lines.
    if len(names) == 1:
        names.append(names[0])
    defined = tool_output(["nm", "--defined-only", "--extern-only"], names)
    undef = tool_output(["nm", "--undefined-only"], names)
    relocs = tool_output(["objdump", "-r"], names)
    objs = {}
    for path, src in paths.items():
        objs[src] = ({p[2] for p in (line.split() for line in defined[path]) if len(p) == 3},
                     {line.split()[-1] for line in undef[path]},
                     code_refs(relocs[path]))
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


def check_layers(root, headers, rep):
    for src in sources(root):
        mod = headers.get(src) if src.startswith("include/") else src_module(src)
        if mod is None:
            continue
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


def check_cycles(objs, rep):
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
    for (a, b), syms in sorted(uses.items()):
        if a < b and (b, a) in uses:
            back = uses[(b, a)]
            rep.add(f"cycle: {a} <-> {b}",
                    f"{a} calls {', '.join(sorted(syms))}",
                    f"{b} calls {', '.join(sorted(back))}")


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


# --- main ------------------------------------------------------------------------------------

CHECKS = ("output", "spawn", "layers", "cycle", "defaults", "commands")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--objdir", action="append", default=[])
    ap.add_argument("--describe")
    ap.add_argument("--known")
    ap.add_argument("--default-exceptions")
    ap.add_argument("--check", action="append", choices=CHECKS)
    a = ap.parse_args()
    checks = a.check or CHECKS
    rep = Report()

    objs = load_objects(a.objdir)
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
        check_cycles(objs, rep)
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
