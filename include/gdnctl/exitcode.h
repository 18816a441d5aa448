/*
 * The process exit codes of every gdnctl command, in one place (printed by
 * `gdnctl --help` and the man page from src/cmd/cmd_help.c, documented in
 * docs/gdnctl.md "EXIT STATUS", checked by tests/e2e/t0007-exit-codes.sh).
 * Aliases of the original tool's commands keep the codes the original used
 * where docs/compatibility.md says so (codex-loop: gdn_loop_exit_code()).
 */
#ifndef GDNCTL_EXITCODE_H
#define GDNCTL_EXITCODE_H

enum gdn_exit {
	GDN_EXIT_OK = 0,	/* success */
	GDN_EXIT_FAILED = 1,	/* ran; the answer is "failed" (tests, lint, job) */
	GDN_EXIT_USAGE = 2,	/* bad command line; also lint-log's "file missing" */
	GDN_EXIT_CONFIG = 3,	/* bad configuration */
	GDN_EXIT_BACKEND = 4,	/* backend or agent error */
	GDN_EXIT_NETWORK = 5,	/* network failure after retries */
	GDN_EXIT_TIMEOUT = 124, /* a deadline passed */
	GDN_EXIT_SIGNAL = 128,	/* + N: killed by (or stopped on) signal N */
};

/* Map a negative enum gdn_errcode to its exit code (GDN_EXIT_SIGNAL+N is the caller's). */
int gdn_exit_for_error(int errcode);

#endif
