/*
 * The integrity gate of `gdnctl loop` (issue 28: score the kernel, not the
 * harness). After the performance policy decided to keep a candidate, five
 * rules look for a win that the harness scored but the device did not do:
 *
 *   rulers   the self-reported metric and the trace's device time per step
 *            must agree ("device time disagrees")
 *   work     the work per step in the trace (FLOPs, bytes, ops, custom
 *            calls) must not fall by more than a set share ("work per step
 *            fell")
 *   physics  the FLOP/s and bytes/s the trace implies must stay under the
 *            device's peak ("above the device's peak")
 *   holdout  a sealed check kept outside the agent's reach must pass
 *            ("holdout failed")
 *   diff     the candidate's diff must match no suspicious pattern
 *            ("suspicious diff")
 *
 * Each rule has a policy: revert, hold (reverted, kept for review and listed
 * by `loop status`), flag (kept, journaled) or off. docs/integrity.md
 * describes every rule, its reason string and its knob.
 *
 * integrity.c (the pure checks), integrity_peaks.c (the table of peaks),
 * integrity_diff.c (diff patterns), integrity_work.c (work figures of a
 * trace), integrity_config.c (configuration), integrity_gate.c (the loop's
 * side: git diff, the holdout run, the action, the journal).
 */
#ifndef GDNCTL_INTEGRITY_H
#define GDNCTL_INTEGRITY_H

#include <jansson.h>
#include <regex.h>
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/strvec.h"

struct gdn_err;
struct gdn_config;
struct gdn_loop_iter;
struct gdn_perf_config;
struct gdn_perf_measurement;
struct gdn_perf_state;
struct gdn_perf_verdict;
struct gdn_trace_summary;
struct gdn_trace_work;

enum gdn_integrity_policy {
	GDN_INTEGRITY_OFF = 0,
	GDN_INTEGRITY_REVERT,
	GDN_INTEGRITY_HOLD,
	GDN_INTEGRITY_FLAG,
};
/* "revert", "hold", "flag", "off". */
extern const struct gdn_enum gdn_integrity_policy_enum[];

enum gdn_integrity_rule {
	GDN_RULE_DIFF = 0,
	GDN_RULE_PHYSICS,
	GDN_RULE_WORK,
	GDN_RULE_RULERS,
	GDN_RULE_HOLDOUT,
	GDN_RULE_NR,
};
/* "diff", "physics", "work", "rulers", "holdout" (the order the rules run in). */
extern const struct gdn_enum gdn_integrity_rule_enum[];

/* ---- peaks (integrity_peaks.c) ---- */

struct gdn_peak {
	const char *kind;   /* "tpu-v5e", "h100", ... */
	double flops;	    /* FLOP/s, dense, the fastest format the sheet lists (0: unknown) */
	double bytes;	    /* bytes/s of device memory (0: unknown) */
	const char *source; /* the public spec sheet */
};
/* The built-in table (8 rows). */
const struct gdn_peak *gdn_peaks_builtin(size_t *nr);
struct gdn_peaks {
	struct gdn_peak *v; /* kind owned (char *), source "configuration" */
	size_t nr, alloc;
};
void gdn_peaks_release(struct gdn_peaks *p);
/*
 * One override: "KIND flops=N bytes=N" (either or both; N a number with an
 * optional T/G/P/M/k suffix, e.g. 197T, or 8e12). GDN_ECONFIG naming it.
 */
int gdn_peaks_parse(struct gdn_peaks *p, const char *spec, struct gdn_err *err);
/* The override of `kind` if any, else the built-in row, else NULL (case-insensitive). */
const struct gdn_peak *gdn_peaks_find(const struct gdn_peaks *p, const char *kind);

/* ---- diff patterns (integrity_diff.c) ---- */

struct gdn_diffpat {
	char *name;	     /* "timer-patched" */
	char side;	     /* '+': added lines, '-': removed lines, 'h': file headers */
	struct strvec globs; /* fnmatch(3) on the file's path (basename too); empty: every file */
	char *regex;	     /* POSIX extended */
	regex_t re;
};
struct gdn_diffpats {
	struct gdn_diffpat *v;
	size_t nr, alloc;
};
void gdn_diffpats_release(struct gdn_diffpats *p);
/*
 * One pattern: "NAME:SIDE:GLOB[,GLOB...]:REGEX" (SIDE + - or h; GLOB may be
 * empty for every file; REGEX is the rest of the line, colons included).
 * GDN_ECONFIG naming the spec.
 */
int gdn_diffpat_parse(struct gdn_diffpats *p, const char *spec, struct gdn_err *err);
/* The defaults for JAX, PyTorch, Triton, CUDA and C (docs/integrity.md). */
void gdn_diffpats_add_defaults(struct gdn_diffpats *p);
/* The default specs (NULL-terminated), for the docs test and -h. */
extern const char *const gdn_diffpat_defaults[];
/*
 * Scan a unified diff (git diff output): one line per match,
 * "NAME in FILE: TEXT" (TEXT cut at 80 bytes), each pattern at most once.
 */
void gdn_diffpat_scan(const struct gdn_diffpats *p, const char *diff, size_t len,
		      struct strvec *matches);

/* ---- configuration (integrity_config.c) ---- */

struct gdn_integrity_config {
	bool on;
	enum gdn_integrity_policy policy[GDN_RULE_NR];
	double rulers_share;	  /* the device must show this share of the claimed gain (0.5) */
	double confidence;	  /* of the device time's interval (0.95) */
	double work_max_drop_pct; /* work may fall at most this much (50) */
	struct strvec work_allow; /* figures allowed to fall: flops, bytes, ops, custom_calls */
	char *device;		  /* peaks row, or NULL: physics off */
	struct gdn_peaks peaks;
	struct gdn_diffpats pats;
	char *holdout_command; /* NULL: no holdout */
	char *holdout_file;    /* absolute; hashed before each use */
	char holdout_sha256[65];
	long holdout_timeout_ms;
};
void gdn_integrity_config_init(struct gdn_integrity_config *c);
void gdn_integrity_config_release(struct gdn_integrity_config *c);
/*
 * Read the integrity.* and project.holdout_* keys. The holdout file must
 * exist outside `agent_dir` (and the repository `repo_root`); its sha256 is
 * taken now (and must equal project.holdout_sha256 when that is set).
 * GDN_ECONFIG with one line.
 */
int gdn_integrity_configure(struct gdn_integrity_config *c, const struct gdn_config *cfg,
			    const char *repo_root, const char *agent_dir, struct gdn_err *err);

/* The sha256 of a file (hex, NUL-terminated). */
int gdn_integrity_hash_file(const char *path, char hex[65], struct gdn_err *err);

/* ---- the pure checks (integrity.c) ---- */

struct gdn_integrity_finding {
	enum gdn_integrity_rule rule;
	enum gdn_integrity_policy policy;
	char *reason; /* owned, one line: "device time disagrees: ..." */
};
struct gdn_integrity_findings {
	struct gdn_integrity_finding *v;
	size_t nr, alloc;
};
void gdn_integrity_findings_release(struct gdn_integrity_findings *f);
/* Add a finding under c's policy for the rule (nothing when it is off). */
void gdn_integrity_add(struct gdn_integrity_findings *f, const struct gdn_integrity_config *c,
		       enum gdn_integrity_rule rule, const char *fmt, ...) GDN_PRINTF(4, 5);
/* The finding that decides: the first whose policy reverts or holds, else the first; or NULL. */
const struct gdn_integrity_finding *gdn_integrity_decisive(const struct gdn_integrity_findings *f);

struct gdn_integrity_input {
	/* the claimed speed ratio of the metric (> 1: faster); NAN: no second ruler */
	double metric_ratio;
	/* device time per step (ms), each step one sample */
	const double *dev_champion, *dev_candidate;
	size_t n_champion, n_candidate;
	/* the "work" figures per step (integrity_work.c), borrowed, or NULL */
	json_t *work_champion, *work_candidate;
};
/*
 * The device-time ratio champion/candidate (> 1: the candidate is faster):
 * the ratio of the lower quartiles of each side's steps (a shared host only
 * ever slows a step down), with its percentile bootstrap interval at
 * `confidence` (each side resampled on its own; seeded, deterministic).
 * Returns 0, or -1 without samples or with one that is not positive.
 */
int gdn_integrity_device_ratio(const struct gdn_integrity_input *in, double confidence,
			       double *ratio, double *lo, double *hi);
void gdn_integrity_check_rulers(const struct gdn_integrity_config *c,
				const struct gdn_integrity_input *in,
				struct gdn_integrity_findings *f);
void gdn_integrity_check_work(const struct gdn_integrity_config *c,
			      const struct gdn_integrity_input *in,
			      struct gdn_integrity_findings *f);
void gdn_integrity_check_physics(const struct gdn_integrity_config *c,
				 const struct gdn_integrity_input *in,
				 struct gdn_integrity_findings *f);

/* ---- work figures (integrity_work.c) ---- */

/*
 * Per-step work figures of a trace (new reference): {"ops": N, "custom_calls":
 * N, and when the trace carries them "flops", "bytes", "flops_per_s",
 * "bytes_per_s" (over the device time), "peak_op": {"name", "flops",
 * "flops_per_s"} (the one event implying the highest FLOP/s)}. NULL
 * without steps.
 */
json_t *gdn_integrity_work_figures(const struct gdn_trace_summary *s,
				   const struct gdn_trace_work *w);
/*
 * Put the work figures of `trace` (a file the summary s came from) under
 * "work" in a sample's trace figures (fig, borrowed): read (borrowed) when
 * the summary's read already filled them (an XPlane, gdn_trace_opts.work),
 * else read from the file. A trace that cannot be read leaves fig as it is.
 */
void gdn_integrity_attach_work(json_t *fig, const char *trace, const struct gdn_trace_summary *s,
			       const struct gdn_trace_work *read);

/* ---- the loop's side (integrity_gate.c) ---- */

struct gdn_integrity {
	const struct gdn_integrity_config *c; /* borrowed; NULL or !c->on: off */
	const char *workdir;		      /* the candidate's tree */
	/* the last candidate's outcome: what to say when it is reverted (owned), or NULL */
	char *reason;
};
void gdn_integrity_release(struct gdn_integrity *g);
/*
 * After the performance policy kept a candidate (v->action keeps it): run
 * the rules (diff, physics, work, rulers, then the holdout), journal an
 * `integrity` event (both rulers' figures, every finding, the action), and
 * when the decisive finding reverts or holds: the decision becomes
 * gate_regression, the champion is restored in the state (champ: the one
 * before the decision) and the record marked, v->action reverts and
 * g->reason says why. A flag keeps it. Returns 0 or a negative gdn_errcode.
 */
int gdn_integrity_gate(struct gdn_integrity *g, const struct gdn_loop_iter *it,
		       const struct gdn_perf_config *pc, struct gdn_perf_state *st, json_t *champ,
		       const struct gdn_perf_measurement *cand,
		       const struct gdn_perf_measurement *champ_m, struct gdn_perf_verdict *v,
		       struct gdn_err *err);
/*
 * Held keeps of a journal's bytes (`loop status`): one line each,
 * "iteration N: REASON (kept as REF)", appended to out.
 */
void gdn_integrity_held(const char *buf, size_t len, struct strvec *out);

#endif
