#!/usr/bin/env bash
# The architecture (DESIGN.md sections 1, 3, 5), checked on the built objects
# and the sources by tests/e2e/arch_check.py: only src/cmd/ and main.c print
# or exit; only src/util/proc*.c starts, signals and waits for programs;
# includes follow the layer order; no files call into each other (a strongly
# connected component of the file-level call graph, where a call through a
# private table of function pointers filled in one file is a call into that
# file); no file of src/loop is over 800 lines nor a function there over 100;
# the journal's readers switch on the one event table;
# every option's documented default is its initial value; the command table is
# sorted. Then one planted violation per check, in scratch objects and a
# scratch copy of the sources, to show that each check fails when it should
# and names the file.
#
# tests/e2e/arch-known-violations.txt lists the violations that exist today
# (temporary: a listed violation that no longer occurs fails the test too).
# ctest: cost 60
. "$(dirname "$0")/lib.sh"

: "${GDNCTL_BUILD_DIR:?GDNCTL_BUILD_DIR must point at the build directory (run through ctest)}"
E2E=$GDNCTL_SOURCE_DIR/tests/e2e
KNOWN=$E2E/arch-known-violations.txt
EXCEPTIONS=$E2E/arch-default-exceptions.txt
# The objects of the core library and of main.c, as CMake lays them out:
# OBJDIR/src/loop/engine.c.o is the object of src/loop/engine.c.
CORE=$GDNCTL_BUILD_DIR/CMakeFiles/gdncore.dir
MAIN=$GDNCTL_BUILD_DIR/CMakeFiles/gdnctl.dir
CC=${CC:-cc}

for tool in python3 nm objdump; do
	command -v $tool >/dev/null 2>&1 || skip_all "$tool is not installed"
done
[ -f "$CORE/src/util/proc.c.o" ] && [ -f "$MAIN/src/main.c.o" ] ||
	skip_all "no object files under $CORE and $MAIN (another CMake generator?)"

# Each run reads the objects that nm and objdump have not read in an earlier
# run of this script (by content, in $TRASH/objcache): the real tree's once.
arch_check() {
	python3 "$E2E/arch_check.py" --known "$KNOWN" --default-exceptions "$EXCEPTIONS" \
		--cache "$TRASH/objcache" "$@"
}

# The real tree; the planted runs add an object directory or use a scratch tree.
REAL=(--root "$GDNCTL_SOURCE_DIR" --objdir "$CORE" --objdir "$MAIN")

test_expect_success 'describe mode gives every option its default and initial value' '
	gdnctl help --json >"$TRASH/describe.json" &&
	python3 -c "
import json, sys
doc = json.load(open(sys.argv[1]))
opts = [o for c in doc[\"commands\"] for o in c.get(\"options\") or []]
assert len(opts) > 100, len(opts)
for o in opts:
    assert \"default\" in o, o
    assert (\"initial\" in o) == (o[\"type\"] not in (\"list\", \"kv\")), o
top = [o for c in doc[\"commands\"] if c[\"name\"] == \"trace\"
       for s in c[\"subcommands\"] if s[\"name\"] == \"summary\"
       for o in s[\"options\"] if o[\"long\"] == \"top\"][0]
assert top[\"default\"] == \"20\" and top[\"initial\"] == 20, top
" "$TRASH/describe.json"
'

for check in output spawn layers cycle size events defaults commands; do
	test_expect_success "the tree passes the $check check" '
		arch_check "${REAL[@]}" --describe "$TRASH/describe.json" --check $check >out;
		rc=$?; cat out; test $rc = 0
	'
done

# ---- planted violations ---------------------------------------------------------------------

# plant_obj PATH CODE: compile CODE into the scratch object directory as the
# object of source PATH (src/...).
PLANT=$TRASH/plant
plant_obj() {
	mkdir -p "$PLANT/$(dirname "$1")" &&
		printf '%s\n' "$2" >"$PLANT/$1.src.c" &&
		$CC -c -o "$PLANT/$1.o" "$PLANT/$1.src.c" &&
		rm "$PLANT/$1.src.c"
}

# A fresh scratch copy of the sources in $TRASH/tree.
fresh_tree() {
	rm -rf "$TRASH/tree" && mkdir "$TRASH/tree" &&
		cp -R "$GDNCTL_SOURCE_DIR/src" "$GDNCTL_SOURCE_DIR/include" "$TRASH/tree/"
}
TREE=(--root "$TRASH/tree" --objdir "$CORE" --objdir "$MAIN")

# expect_violation LINE: the run in ./out failed on LINE (and on nothing stale).
expect_violation() {
	cat out &&
		test_grep -Fx "VIOLATION: $1" out &&
		test_grep ! "^FIXED:" out
}

if ! command -v "$CC" >/dev/null 2>&1; then
	test_skip 'planted violations in objects' "no C compiler ($CC)"
else
	test_expect_success 'planted: a module below cmd/ prints (puts, fprintf(stderr)) or exits' '
		rm -rf "$PLANT" &&
		plant_obj src/trace/planted_out.c "#include <stdio.h>
void planted_out(void) { puts(\"hi\"); }" &&
		plant_obj src/hub/planted_err.c "#include <stdio.h>
void planted_err(void) { fprintf(stderr, \"hi\"); }" &&
		plant_obj src/repo/planted_exit.c "#include <stdlib.h>
void planted_exit(void) { exit(3); }" &&
		plant_obj src/cmd/planted_ok.c "#include <stdio.h>
void planted_ok(void) { puts(\"commands print\"); exit(0); }" &&
		test_must_fail =1 arch_check "${REAL[@]}" --objdir "$PLANT" --check output >out &&
		expect_violation "output: src/trace/planted_out.c: puts" &&
		expect_violation "output: src/hub/planted_err.c: stderr" &&
		expect_violation "output: src/repo/planted_exit.c: exit" &&
		test_grep ! planted_ok out
	'

	test_expect_success 'planted: fork, exec, popen and kill outside src/util/proc*.c' '
		rm -rf "$PLANT" &&
		plant_obj src/backend/planted_spawn.c "#include <stdio.h>
FILE *planted_spawn(void) { return popen(\"true\", \"r\"); }" &&
		plant_obj src/loop/planted_kill.c "#include <signal.h>
int planted_kill(int pg) { return kill(-pg, SIGTERM); }" &&
		plant_obj src/cmd/planted_fork.c "#include <unistd.h>
int planted_fork(char **argv) { if (!fork()) execvp(argv[0], argv); return 0; }" &&
		test_must_fail =1 arch_check "${REAL[@]}" --objdir "$PLANT" --check spawn >out &&
		expect_violation "spawn: src/backend/planted_spawn.c: popen" &&
		expect_violation "spawn: src/loop/planted_kill.c: kill" &&
		expect_violation "spawn: src/cmd/planted_fork.c: fork" &&
		expect_violation "spawn: src/cmd/planted_fork.c: execvp"
	'

	test_expect_success 'planted: two files that call each other' '
		rm -rf "$PLANT" &&
		plant_obj src/lint/planted_a.c "void planted_a(int n); void planted_b(int n);
void planted_a(int n) { if (n) planted_b(n - 1); }" &&
		plant_obj src/lint/planted_b.c "void planted_a(int n); void planted_b(int n);
void planted_b(int n) { if (n) planted_a(n - 1); }" &&
		test_must_fail =1 arch_check "${REAL[@]}" --objdir "$PLANT" --check cycle >out &&
		expect_violation "cycle: src/lint/planted_a.c <-> src/lint/planted_b.c" &&
		test_grep "src/lint/planted_a.c calls planted_b" out
	'

	test_expect_success 'planted: three files that call each other in a ring' '
		rm -rf "$PLANT" &&
		plant_obj src/lint/planted_a.c "void planted_b(int n); void planted_a(int n);
void planted_a(int n) { if (n) planted_b(n - 1); }" &&
		plant_obj src/lint/planted_b.c "void planted_c(int n); void planted_b(int n);
void planted_b(int n) { if (n) planted_c(n - 1); }" &&
		plant_obj src/lint/planted_c.c "void planted_a(int n); void planted_c(int n);
void planted_c(int n) { if (n) planted_a(n - 1); }" &&
		test_must_fail =1 arch_check "${REAL[@]}" --objdir "$PLANT" --check cycle >out &&
		expect_violation "cycle: src/lint/planted_a.c <-> src/lint/planted_b.c <-> src/lint/planted_c.c" &&
		test_grep "src/lint/planted_c.c calls planted_a (in src/lint/planted_a.c)" out
	'

	# plant_src PATH CODE: CODE as the source PATH of the scratch tree and
	# compiled as its object (fresh_tree first).
	plant_src() {
		printf '%s\n' "$2" >"$TRASH/tree/$1" && plant_obj "$1" "$2"
	}
	TABLE="struct planted_steps { int (*step)(int n); };"

	test_expect_success 'planted: a table of functions filled in one file, called from a sibling' '
		rm -rf "$PLANT" && fresh_tree &&
		plant_src src/lint/planted_core.c "$TABLE
int planted_sched_run(const struct planted_steps *s, int n);
static int core_step(int n) { return n - 1; }
static const struct planted_steps core_steps = {.step = core_step};
int planted_core_run(int n); int planted_core_run(int n) { return planted_sched_run(&core_steps, n); }" &&
		plant_src src/lint/planted_sched.c "$TABLE
int planted_sched_run(const struct planted_steps *s, int n);
int planted_sched_run(const struct planted_steps *s, int n) { while (n) n = s->step(n); return n; }" &&
		test_must_fail =1 arch_check "${TREE[@]}" --objdir "$PLANT" --check cycle >out &&
		expect_violation "cycle: src/lint/planted_core.c <-> src/lint/planted_sched.c" &&
		test_grep "src/lint/planted_sched.c calls planted_steps.step (through the table)" out
	'

	test_expect_success 'a table of functions with two implementations is not a cycle' '
		plant_src src/lint/planted_other.c "$TABLE
static int other_step(int n) { return 0 * n; }
const struct planted_steps planted_other_steps = {other_step};" &&
		arch_check "${TREE[@]}" --objdir "$PLANT" --check cycle >out &&
		cat out && test_grep ! planted out
	'

	test_expect_success 'a driver table that names its drivers is not a cycle' '
		rm -rf "$PLANT" &&
		plant_obj src/lint/planted_registry.c "extern const int planted_driver;
const int *const planted_drivers[] = {&planted_driver};
int planted_helper(void); int planted_helper(void) { return 1; }" &&
		plant_obj src/lint/planted_driver.c "int planted_helper(void);
const int planted_driver = 1;
int planted_use(void); int planted_use(void) { return planted_helper(); }" &&
		arch_check "${REAL[@]}" --objdir "$PLANT" --check cycle >out &&
		cat out && test_grep ! planted out
	'
fi

test_expect_success 'planted: stdout, stderr and write(2, ...) in a source file below cmd/' '
	fresh_tree &&
	cat >"$TRASH/tree/src/lint/planted_macro.c" <<-\EOF &&
	/* never compiled: the source check sees what a build leaves out */
	#define SAY(s) fputs((s), stderr)
	static void shout(void) { write(2, "x", 1); }
	#define DIE() exit(1)
	EOF
	test_must_fail =1 arch_check "${TREE[@]}" --check output >out &&
	expect_violation "output: src/lint/planted_macro.c: stderr" &&
	expect_violation "output: src/lint/planted_macro.c: write(2" &&
	expect_violation "output: src/lint/planted_macro.c: exit" &&
	test_grep "src/lint/planted_macro.c:2:" out
'

test_expect_success 'planted: system() in a source file outside proc*.c' '
	fresh_tree &&
	echo "static int run(void) { return system(\"ls\"); }" >"$TRASH/tree/src/report/planted.c" &&
	test_must_fail =1 arch_check "${TREE[@]}" --check spawn >out &&
	expect_violation "spawn: src/report/planted.c: system"
'

test_expect_success 'planted: includes up the layer order, between peers, of a private header' '
	fresh_tree &&
	printf "#include \"gdnctl/loop.h\"\n" >"$TRASH/tree/src/util/planted_up.c" &&
	printf "#include \"gdnctl/http.h\"\n" >"$TRASH/tree/src/trace/planted_peer.c" &&
	printf "#include \"gdnctl/cmd.h\"\n" >>"$TRASH/tree/include/gdnctl/report.h" &&
	printf "#include \"../loop/agent_impl.h\"\n" >"$TRASH/tree/src/cmd/planted_private.c" &&
	test_must_fail =1 arch_check "${TREE[@]}" --check layers >out &&
	expect_violation "layers: src/util/planted_up.c: includes gdnctl/loop.h" &&
	expect_violation "layers: src/cmd/planted_private.c: includes ../loop/agent_impl.h" &&
	expect_violation "layers: src/trace/planted_peer.c: includes gdnctl/http.h" &&
	expect_violation "layers: include/gdnctl/report.h: includes gdnctl/cmd.h"
'

test_expect_success 'planted: the option table below src/cmd/ in the loop' '
	fresh_tree &&
	printf "#include \"gdnctl/opt.h\"\n" >"$TRASH/tree/src/loop/planted_opt.c" &&
	printf "int planted_rows(const struct opt *o);\n" >>"$TRASH/tree/include/gdnctl/loop_setup.h" &&
	test_must_fail =1 arch_check "${TREE[@]}" --check layers >out &&
	expect_violation "layers: src/loop/planted_opt.c: gdnctl/opt.h" &&
	expect_violation "layers: include/gdnctl/loop_setup.h: struct opt"
'

test_expect_success 'planted: a header without a layer' '
	fresh_tree &&
	printf "struct planted { int x; };\n" >"$TRASH/tree/include/gdnctl/planted.h" &&
	test_must_fail =1 arch_check "${TREE[@]}" --check layers >out &&
	expect_violation "layers: include/gdnctl/planted.h: no layer"
'

test_expect_success 'planted: a file of src/loop over 800 lines, a function over 100' '
	fresh_tree &&
	{
		echo "static int planted_long(int n)" && echo "{" &&
		for i in $(seq 97); do echo "	n += $i;"; done &&
		echo "	return n;" && echo "}" &&
		echo "static int planted_short(int n)" && echo "{" &&
		for i in $(seq 96); do echo "	n += $i;"; done &&
		echo "	return n;" && echo "}"
	} >"$TRASH/tree/src/loop/planted_fn.c" &&
	seq 801 | sed "s/^/int planted_v/; s/$/;/" >"$TRASH/tree/src/loop/planted_big.c" &&
	seq 801 | sed "s/^/int planted_v/; s/$/;/" >"$TRASH/tree/src/report/planted_big.c" &&
	test_must_fail =1 arch_check "${TREE[@]}" --check size >out &&
	expect_violation "size: src/loop/planted_fn.c: planted_long over 100 lines" &&
	expect_violation "size: src/loop/planted_big.c: over 800 lines" &&
	test_grep "src/loop/planted_fn.c:1: planted_long has 101 lines" out &&
	test_grep ! "planted_short\|src/report/planted_big.c" out
'

test_expect_success 'planted: a journal reader that compares event names' '
	fresh_tree &&
	cat >"$TRASH/tree/src/report/planted_reader.c" <<-\EOF &&
	static int planted(const char *ev) { return !strcmp(ev, "run_start") || !strcmp(ev, "x"); }
	static int stashed(const char *event) { return !strncmp(event, "stash_", 6); }
	EOF
	test_must_fail =1 arch_check "${TREE[@]}" --check events >out &&
	expect_violation "events: src/report/planted_reader.c: compares an event name with \"run_start\"" &&
	expect_violation "events: src/report/planted_reader.c: compares an event name with \"stash_\"" &&
	test_grep ! "\"x\"" out
'

test_expect_success 'planted: the command table out of order' '
	fresh_tree &&
	table=$(grep -rl "gdn_commands\[\] = {" "$TRASH/tree/src") &&
	sed -i "s/{\"version\", cmd_version/{\"aardvark\", cmd_version/" "$table" &&
	test_must_fail =1 arch_check "${TREE[@]}" --check commands >out &&
	expect_violation "commands: ${table#"$TRASH/tree/"}: '\''trace'\'' before '\''aardvark'\''"
'

test_expect_success 'planted: a documented default that is not the initial value' '
	python3 -c "
import json, sys
doc = json.load(open(sys.argv[1]))
for c in doc[\"commands\"]:
    for s in c.get(\"subcommands\") or []:
        for o in s.get(\"options\") or []:
            if (c[\"name\"], s[\"name\"], o[\"long\"]) == (\"trace\", \"summary\", \"top\"):
                o[\"initial\"] = 10
json.dump(doc, open(sys.argv[2], \"w\"))
" "$TRASH/describe.json" planted.json &&
	test_must_fail =1 arch_check --root "$GDNCTL_SOURCE_DIR" --describe planted.json \
		--check defaults >out &&
	expect_violation "defaults: trace summary --top: documented \"20\", initial 10"
'

test_expect_success 'an exception that matches no option fails the defaults check' '
	{ cat "$EXCEPTIONS" && echo "trace no-such-option: planted"; } >exceptions.txt &&
	test_must_fail =1 python3 "$E2E/arch_check.py" --root "$GDNCTL_SOURCE_DIR" \
		--describe "$TRASH/describe.json" --default-exceptions exceptions.txt --check defaults >out &&
	cat out &&
	test_grep -F "VIOLATION: defaults: exception '\''trace no-such-option'\''" out
'

test_expect_success 'a known violation that no longer occurs fails the test' '
	{ cat "$KNOWN" && echo "cycle: src/lint/lint.c <-> src/lint/text.c"; } >known.txt &&
	test_must_fail =1 python3 "$E2E/arch_check.py" "${REAL[@]}" --known known.txt --check cycle \
		--cache "$TRASH/objcache" >out &&
	cat out &&
	test_grep -Fx "FIXED: cycle: src/lint/lint.c <-> src/lint/text.c" out
'

test_done
