/*
 * The configuration schema: every key gdnctl knows, its type, built-in
 * default, environment variable and one line of help. Each row is
 * documented in docs/configuration.md (a unit test checks that). Only
 * keys that some code reads belong here.
 *
 * Defaults reproduce the Marin GDN conventions, so gdnctl works with no
 * configuration inside the Marin repository.
 */
#include "gdnctl/compat.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"

/*
 * The choices of string keys: the names the values are read by. (The lint
 * module's lint_scope_enum has the same names as lint_scopes; configuration
 * sits below lint, so the schema keeps its own rows.)
 */
static const struct gdn_enum lint_scopes[] = {
    {"last-entry", 0, "the last numbered entry"},
    {"all", 1, "the whole file"},
    GDN_ENUM_END,
};
static const struct gdn_enum backend_types[] = {
    {"local", 0, "this machine"},
    {"ssh", 1, "a host over ssh"},
    {"slurm", 2, "a Slurm cluster"},
    {"ray", 3, "a Ray cluster (Marin's wrappers or ray job)"},
    {"dev-tpu", 4, "a held Marin dev TPU (dev_tpu.py)"},
    {"iris", 5, "Marin's Iris orchestrator (iris job run)"},
    GDN_ENUM_END,
};
static const struct gdn_enum sync_modes[] = {
    {"none", 0, "no copy of the tree"},
    {"rsync", 1, "rsync the tree to the host first"},
    GDN_ENUM_END,
};
static const struct gdn_enum ray_clis[] = {
    {"marin", 0, "Marin's wrappers (ray_run.py, cluster.py)"},
    {"ray", 1, "the plain ray job CLI"},
    GDN_ENUM_END,
};
static const struct gdn_enum devtpu_executes[] = {
    {"marin", 0, "dev_tpu.py execute"},
    {"ssh", 1, "ssh dev-tpu-NAME"},
    GDN_ENUM_END,
};

static const struct gdn_enum trace_sources[] = {
    {"auto", 0, "local, then the backend's workdir, then GCS, then W&B"},
    {"local", 1, "project.trace_glob in the working tree"},
    {"backend", 2, "project.trace_glob in the backend's workdir, copied back"},
    {"wandb", 3, "the jax_profile artifact of the W&B run the profile printed"},
    {"gcs", 4, "the gs:// profile URI or hosted-XProf link the profile printed"},
    {"none", 5, "no trace"},
    GDN_ENUM_END,
};

/* gdnctl loop's --validation-mode, --perf-mode and --perf-direction (gate.h, perf.h) */
static const struct gdn_enum validation_modes[] = {
    {"required", 1, "the tests, then the profile"},
    {"profile-only", 2, "the profile only"},
    {"off", 0, "no validation"},
    GDN_ENUM_END,
};
static const struct gdn_enum perf_modes[] = {
    {"on", 1, "measure each iteration and decide"},
    {"required", 1, "the same as on"},
    {"off", 0, "no performance policy"},
    GDN_ENUM_END,
};
static const struct gdn_enum perf_directions[] = {
    {"auto", 0, "from the metric's name (a name that says neither is refused)"},
    {"higher", 1, "higher is better"},
    {"lower", 2, "lower is better"},
    GDN_ENUM_END,
};

/* the integrity gate (integrity.h) */
static const struct gdn_enum integrity_modes[] = {
    {"off", 0, "no integrity gate"},
    {"on", 1, "check every kept candidate"},
    GDN_ENUM_END,
};
static const struct gdn_enum integrity_policies[] = {
    {"revert", 1, "revert the candidate"},
    {"hold", 2, "revert it, kept for review (loop status lists it)"},
    {"flag", 3, "keep it, journaled"},
    {"off", 0, "do not check"},
    GDN_ENUM_END,
};

const struct gdn_cfg_key gdn_cfg_schema[] = {
    {"backend", GDN_CFG_STRING, "local", "GDNCTL_BACKEND", NULL,
     "the backend run/wait/logs/stop use without --backend", false},
    {"backends", GDN_CFG_MAP, NULL, NULL, NULL, "named backends (where work runs)", false},
    {"backends.*.address", GDN_CFG_STRING, NULL, NULL, NULL,
     "ray (cli: ray): the Ray dashboard address (ray job --address)", false},
    {"backends.*.allocate_log", GDN_CFG_STRING, NULL, NULL, NULL,
     "dev-tpu: the allocation log (default ~/.local/state/gdnctl/dev-tpu-NAME-allocate.log)",
     false},
    {"backends.*.attempts", GDN_CFG_INT, NULL, NULL, NULL,
     "dev-tpu: passes over cluster and fallback_clusters when allocating (default 1)", false},
    {"backends.*.cli", GDN_CFG_STRING, NULL, NULL, ray_clis,
     "ray: Marin's wrappers (ray_run.py, cluster.py) or the plain ray job CLI (default marin)",
     false},
    {"backends.*.cluster", GDN_CFG_STRING, NULL, NULL, NULL,
     "ray, dev-tpu: the Marin cluster (default us-central1); iris: --cluster (default marin, "
     "none: not passed)",
     false},
    {"backends.*.command_prefix", GDN_CFG_LIST, NULL, NULL, NULL,
     "ray, dev-tpu, iris: the program and first words of every command (default: uv,run; cli "
     "ray: ray; iris: programs.iris, else uv,run,iris)",
     false},
    {"backends.*.cpu", GDN_CFG_STRING, NULL, NULL, NULL, "iris: job run --cpu (default: the CLI's)",
     false},
    {"backends.*.disk", GDN_CFG_STRING, NULL, NULL, NULL,
     "iris: job run --disk (60GB; default: the CLI's)", false},
    {"backends.*.enable_extra_resources", GDN_CFG_BOOL, NULL, NULL, NULL,
     "iris: job run --enable-extra-resources (default true; needed for --tpu)", false},
    {"backends.*.env", GDN_CFG_LIST, NULL, NULL, NULL,
     "iris: KEY=VALUE items every job gets (job run -e KEY VALUE)", false},
    {"backends.*.execute", GDN_CFG_STRING, NULL, NULL, devtpu_executes,
     "dev-tpu: run commands with dev_tpu.py execute or ssh dev-tpu-NAME (default marin)", false},
    {"backends.*.extras", GDN_CFG_LIST, NULL, NULL, NULL,
     "iris: UV extras the job installs (job run --extra, e.g. tpu)", false},
    {"backends.*.fallback_clusters", GDN_CFG_LIST, NULL, NULL, NULL,
     "dev-tpu: clusters tried after cluster, in order", false},
    {"backends.*.host", GDN_CFG_STRING, NULL, NULL, NULL,
     "ssh: the host to connect to; slurm: the login host traces are copied back from", false},
    {"backends.*.identity", GDN_CFG_STRING, NULL, NULL, NULL,
     "ssh, slurm login host: private key file (ssh -i)", false},
    {"backends.*.job_name", GDN_CFG_STRING, NULL, NULL, NULL,
     "slurm: job name when run has no --name (default gdnctl)", false},
    {"backends.*.jobdir", GDN_CFG_STRING, "~/.cache/gdnctl/jobs", NULL, NULL,
     "local, ssh, slurm: directory of job state, output and batch scripts", false},
    {"backends.*.kill_grace", GDN_CFG_DURATION, "5s", NULL, NULL,
     "local, ssh: time between SIGTERM and SIGKILL when a job is stopped", false},
    {"backends.*.max_retries", GDN_CFG_INT, NULL, NULL, NULL,
     "iris: job run --max-retries (default: the CLI's, 0)", false},
    {"backends.*.memory", GDN_CFG_STRING, NULL, NULL, NULL,
     "iris: job run --memory (64GB; default: the CLI's)", false},
    {"backends.*.no_sync", GDN_CFG_BOOL, NULL, NULL, NULL,
     "dev-tpu: dev_tpu.py execute --no-sync (default false)", false},
    {"backends.*.partition", GDN_CFG_STRING, NULL, NULL, NULL, "slurm: --partition", false},
    {"backends.*.poll", GDN_CFG_DURATION, NULL, NULL, NULL,
     "how often wait polls (default: local 1s, ssh 5s, slurm 10s, iris 5s)", false},
    {"backends.*.port", GDN_CFG_INT, NULL, NULL, NULL, "ssh, slurm login host: port (ssh -p)",
     false},
    {"backends.*.ready_markers", GDN_CFG_LIST, NULL, NULL, NULL,
     "dev-tpu: output that means the allocation is active (default: dev_tpu.py's two lines)",
     false},
    {"backends.*.ready_timeout", GDN_CFG_DURATION, NULL, NULL, NULL,
     "dev-tpu: give a cluster up when not active after this long (default 15m)", false},
    {"backends.*.region", GDN_CFG_LIST, NULL, NULL, NULL,
     "iris: regions the job may run in (job run --region, repeated)", false},
    {"backends.*.retry_sleep", GDN_CFG_DURATION, NULL, NULL, NULL,
     "dev-tpu: sleep between allocation passes (default 30s)", false},
    {"backends.*.sbatch_options", GDN_CFG_LIST, NULL, NULL, NULL,
     "slurm: extra #SBATCH lines (--gres=gpu:1, --account=x)", false},
    {"backends.*.ssh_options", GDN_CFG_LIST, NULL, NULL, NULL,
     "ssh, slurm login host: extra ssh -o options (StrictHostKeyChecking=accept-new)", false},
    {"backends.*.stop_timeout", GDN_CFG_DURATION, NULL, NULL, NULL,
     "dev-tpu: release sends SIGINT, then SIGTERM after this long (default 2m)", false},
    {"backends.*.sync", GDN_CFG_STRING, "none", NULL, sync_modes,
     "ssh: copy the repository to workdir with rsync before each run", false},
    {"backends.*.sync_exclude", GDN_CFG_LIST, NULL, NULL, NULL,
     "ssh: rsync --exclude patterns for sync", false},
    {"backends.*.sync_path", GDN_CFG_STRING, NULL, NULL, NULL,
     "dev-tpu: dev_tpu.py allocate --sync-path", false},
    {"backends.*.time_limit", GDN_CFG_STRING, NULL, NULL, NULL,
     "slurm: --time (minutes, or [D-]HH:MM:SS)", false},
    {"backends.*.tpu", GDN_CFG_STRING, NULL, NULL, NULL,
     "ray: the TPU type jobs ask for (ray_run.py --tpu; default auto, none: no TPU); iris: "
     "job run --tpu (default v5p-8, none: no TPU)",
     false},
    {"backends.*.tpu_name", GDN_CFG_STRING, NULL, NULL, NULL,
     "dev-tpu: the dev TPU's name (ssh host dev-tpu-NAME)", false},
    {"backends.*.tpu_type", GDN_CFG_STRING, NULL, NULL, NULL,
     "dev-tpu: the TPU type to allocate (dev_tpu.py --tpu-type)", false},
    {"backends.*.type", GDN_CFG_STRING, NULL, NULL, backend_types, "the kind of backend", false},
    {"backends.*.user", GDN_CFG_STRING, NULL, NULL, NULL,
     "ssh, slurm login host: the remote user (ssh -l)", false},
    {"backends.*.verbose", GDN_CFG_BOOL, NULL, NULL, NULL,
     "dev-tpu: dev_tpu.py --verbose (default false)", false},
    {"backends.*.workdir", GDN_CFG_STRING, NULL, NULL, NULL,
     "where the work runs (ssh: remote path; local, slurm: relative to the repository)", false},
    {"integrity.confidence", GDN_CFG_FLOAT, "0.95", NULL, NULL,
     "integrity gate: confidence of the device time's interval (rule rulers)", false},
    {"integrity.device", GDN_CFG_STRING, NULL, "GDNCTL_INTEGRITY_DEVICE", NULL,
     "integrity gate: the device kind whose peaks bound the trace (tpu-v4, tpu-v5e, tpu-v5p, "
     "tpu-v6e, h100, h200, b200, mi300x, or an integrity.peaks row); unset: no physics floor",
     false},
    {"integrity.diff_defaults", GDN_CFG_BOOL, "true", NULL, NULL,
     "integrity gate: use the built-in suspicious-diff patterns (JAX, PyTorch, Triton, CUDA, C)",
     false},
    {"integrity.diff_patterns", GDN_CFG_LIST, NULL, NULL, NULL,
     "integrity gate: more suspicious-diff patterns, NAME:SIDE:GLOB[,GLOB...]:REGEX", false},
    {"integrity.mode", GDN_CFG_STRING, "off", "GDNCTL_INTEGRITY", integrity_modes,
     "loop: the integrity gate on every kept candidate (docs/integrity.md)", false},
    {"integrity.peaks", GDN_CFG_LIST, NULL, NULL, NULL,
     "integrity gate: peaks per device kind, 'KIND flops=N bytes=N' (replace or add rows)", false},
    {"integrity.policy.diff", GDN_CFG_STRING, "hold", NULL, integrity_policies,
     "integrity gate: a suspicious diff (rule diff)", false},
    {"integrity.policy.holdout", GDN_CFG_STRING, "revert", NULL, integrity_policies,
     "integrity gate: the sealed holdout check failed (rule holdout)", false},
    {"integrity.policy.physics", GDN_CFG_STRING, "revert", NULL, integrity_policies,
     "integrity gate: FLOP/s or bytes/s above the device's peak (rule physics)", false},
    {"integrity.policy.rulers", GDN_CFG_STRING, "revert", NULL, integrity_policies,
     "integrity gate: the metric improves and the device time per step does not (rule rulers)",
     false},
    {"integrity.policy.work", GDN_CFG_STRING, "revert", NULL, integrity_policies,
     "integrity gate: the work per step fell (rule work)", false},
    {"integrity.rulers_share", GDN_CFG_FLOAT, "0.5", NULL, NULL,
     "integrity gate: the share of the claimed gain the device time must show", false},
    {"integrity.work_allow", GDN_CFG_LIST, "ops", NULL, NULL,
     "integrity gate: work figures allowed to fall (flops, bytes, ops, custom_calls)", false},
    {"integrity.work_max_drop_pct", GDN_CFG_FLOAT, "50", NULL, NULL,
     "integrity gate: how far (percent) the work per step may fall", false},
    {"lint.check_commits", GDN_CFG_BOOL, "false", "GDNCTL_LINT_CHECK_COMMITS", NULL,
     "lint-log checks that the commits named in entries exist in the repository", false},
    {"lint.require_fields", GDN_CFG_LIST, NULL, "GDNCTL_LINT_REQUIRE_FIELDS", NULL,
     "fields every checked entry must have (none: no field check)", false},
    {"lint.scope", GDN_CFG_STRING, "last-entry", "GDNCTL_LINT_SCOPE", lint_scopes,
     "which entries lint-log checks", false},
    {"lint.since", GDN_CFG_INT, "0", "GDNCTL_LINT_SINCE", NULL,
     "entries numbered below this are not field-checked", false},
    {"log_file", GDN_CFG_STRING, "lib/levanter/.agents/projects/gdn_pallas_tpu_hillclimb.md",
     "GDNCTL_LOG_FILE", NULL, "the markdown running log, relative to the repository root", false},
    {"loop.backend", GDN_CFG_STRING, NULL, "GDNCTL_LOOP_BACKEND", NULL,
     "the backend the loop's validation gate uses without --backend (default: local)", false},
    {"loop.perf.direction", GDN_CFG_STRING, "auto", "GDNCTL_LOOP_PERF_DIRECTION", perf_directions,
     "gdnctl loop --perf-direction without the option", false},
    {"loop.perf.max_regression_pct", GDN_CFG_FLOAT, "1.0", "GDNCTL_LOOP_PERF_MAX_REGRESSION_PCT",
     NULL, "gdnctl loop --perf-max-regression-pct without the option", false},
    {"loop.perf.metric", GDN_CFG_STRING, "throughput/mfu", "GDNCTL_LOOP_PERF_METRIC", NULL,
     "gdnctl loop --perf-metric without the option", false},
    {"loop.perf.min_improvement_pct", GDN_CFG_FLOAT, "0.25", "GDNCTL_LOOP_PERF_MIN_IMPROVEMENT_PCT",
     NULL, "gdnctl loop --perf-min-improvement-pct without the option", false},
    {"loop.perf.mode", GDN_CFG_STRING, "off", "GDNCTL_LOOP_PERF_MODE", perf_modes,
     "gdnctl loop --perf-mode without the option", false},
    {"loop.perf.repeats", GDN_CFG_INT, "1", "GDNCTL_LOOP_PERF_REPEATS", NULL,
     "gdnctl loop --perf-repeats without the option", false},
    {"loop.validation_mode", GDN_CFG_STRING, NULL, "GDNCTL_LOOP_VALIDATION_MODE", validation_modes,
     "gdnctl loop --validation-mode without the option (unset: required when "
     "project.test_command is set, else off)",
     false},
    {"loop.workers", GDN_CFG_INT, "1", "GDNCTL_LOOP_WORKERS", NULL,
     "the agents gdnctl loop runs at once without --workers, each in a worktree of its own", false},
    {"programs.iris", GDN_CFG_STRING, NULL, "GDNCTL_IRIS", NULL,
     "the iris program (iris backends; unset: uv run iris)", false},
    {"programs.ray", GDN_CFG_STRING, "ray", "GDNCTL_RAY", NULL,
     "the ray program (ray backends with cli: ray)", false},
    {"programs.rsync", GDN_CFG_STRING, "rsync", "GDNCTL_RSYNC", NULL,
     "the rsync program (ssh backends with sync: rsync)", false},
    {"programs.sacct", GDN_CFG_STRING, "sacct", "GDNCTL_SACCT", NULL, "the Slurm sacct program",
     false},
    {"programs.sbatch", GDN_CFG_STRING, "sbatch", "GDNCTL_SBATCH", NULL, "the Slurm sbatch program",
     false},
    {"programs.scancel", GDN_CFG_STRING, "scancel", "GDNCTL_SCANCEL", NULL,
     "the Slurm scancel program", false},
    {"programs.scontrol", GDN_CFG_STRING, "scontrol", "GDNCTL_SCONTROL", NULL,
     "the Slurm scontrol program", false},
    {"programs.squeue", GDN_CFG_STRING, "squeue", "GDNCTL_SQUEUE", NULL, "the Slurm squeue program",
     false},
    {"programs.ssh", GDN_CFG_STRING, "ssh", "GDNCTL_SSH", NULL, "the ssh program", false},
    {"programs.uv", GDN_CFG_STRING, "uv", "GDNCTL_UV", NULL,
     "the uv program that runs Marin's Ray and dev TPU scripts", false},
    {"project.backend", GDN_CFG_STRING, NULL, "GDNCTL_PROJECT_BACKEND", NULL,
     "the backend test and profile use without --backend (unset: local with the project's "
     "command, else ray)",
     false},
    {"project.directives_dir", GDN_CFG_STRING, NULL, "GDNCTL_DIRECTIVES_DIR", NULL,
     "loop: where --directive-preset NAME finds NAME.md first (unset: "
     "scripts/gdn/session_directives, then session_directives/)",
     false},
    {"project.holdout_command", GDN_CFG_STRING, NULL, "GDNCTL_HOLDOUT_COMMAND", NULL,
     "integrity gate: the sealed check run on every kept candidate after its profile (bash -c "
     "in its tree; GDNCTL_HOLDOUT_FILE and a fresh GDNCTL_HOLDOUT_SEED in its environment)",
     false},
    {"project.holdout_file", GDN_CFG_STRING, NULL, "GDNCTL_HOLDOUT_FILE", NULL,
     "integrity gate: the holdout's file, outside the agent's tree, hashed before each use", false},
    {"project.holdout_sha256", GDN_CFG_STRING, NULL, NULL, NULL,
     "integrity gate: the sha256 project.holdout_file must have (unset: taken at the start)",
     false},
    {"project.profile_command", GDN_CFG_STRING, NULL, "GDNCTL_PROFILE_COMMAND", NULL,
     "the profile command (bash -c locally, bash -lc on remote hosts); unset: the built-in Marin "
     "GDN profile",
     false},
    {"project.prompt_file", GDN_CFG_STRING, NULL, "GDNCTL_PROMPT_FILE", NULL,
     "loop: the prompt template without --prompt-file (unset: "
     "scripts/gdn/codex_iteration_prompt.md, then prompts/iteration.md)",
     false},
    {"project.protected_paths", GDN_CFG_LIST, NULL, "GDNCTL_PROTECTED_PATHS", NULL,
     "loop: globs of files the agent may not change (unset: in a Marin checkout, the GDN tests "
     "and the profile harness)",
     false},
    {"project.test_command", GDN_CFG_STRING, NULL, "GDNCTL_TEST_COMMAND", NULL,
     "the test command (bash -c locally, bash -lc on remote hosts); unset: the built-in Marin GDN "
     "tests",
     false},
    {"project.trace_glob", GDN_CFG_STRING, NULL, "GDNCTL_TRACE_GLOB", NULL,
     "where a profile run leaves its traces (glob, relative to the repository)", false},
    {"project.trace_source", GDN_CFG_STRING, "auto", "GDNCTL_TRACE_SOURCE", trace_sources,
     "where the loop gets each profile run's trace (auto: local, backend, gcs, then wandb)", false},
    {"secrets", GDN_CFG_LIST, NULL, "GDNCTL_SECRETS", NULL,
     "extra environment variable names whose values are masked in output", false},
};

const size_t gdn_cfg_schema_nr = ARRAY_SIZE(gdn_cfg_schema);
