/*
 * The Marin GDN conventions (scripts/gdn/gdnctl.py v3) as data and pure
 * builders, and parsers of the Ray job CLI's output. See
 * include/gdnctl/marin.h; the strings quoted here are the original's.
 */
#include "gdnctl/compat.h"
#include <jansson.h>
#include "gdnctl/marin.h"
#include "gdnctl/err.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

const char *const gdn_marin_ready_markers[] = {
    "TPU allocation is active. Press Ctrl-C to release...",
    "TPU allocated successfully!",
    NULL,
};
const char *const gdn_marin_test_choices[] = {"kernels", "layer", "both", NULL};
const char *const gdn_marin_size_choices[] = {"130m", "300m", "520m", "1_2b", NULL};
const char *const gdn_marin_wandb_choices[] = {"online", "offline", "disabled", NULL};
static const char *const ce_impl_choices[] = {"auto",	    "xla",	  "reference",
					      "pallas_tpu", "pallas_gpu", NULL};

#define TORCH_CPU_INDEX	      "https://download.pytorch.org/whl/cpu"
#define TORCH_CPU_REQUIREMENT "torch==2.9.0+cpu"
#define NAME_MAX_LEN	      200

static bool is_file(const char *root, const char *rel, bool dir)
{
	struct stat st;
	char *path = xstrfmt("%s/%s", root, rel);
	bool yes = !stat(path, &st) && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));

	free(path);
	return yes;
}

bool gdn_marin_checkout(const char *root)
{
	if (!root || !*root || !is_file(root, GDN_MARIN_LEVANTER, true))
		return false;
	return is_file(root, GDN_MARIN_RAY_RUN, false) || is_file(root, GDN_MARIN_IRIS, true);
}

bool gdn_marin_iris_checkout(const char *root)
{
	return gdn_marin_checkout(root) && is_file(root, GDN_MARIN_IRIS, true) &&
	       !is_file(root, GDN_MARIN_RAY_RUN, false);
}

/* ---- names ---- */

static const struct {
	const char *what;  /* for messages */
	const char *extra; /* allowed besides letters and digits */
	const char *shown; /* the allowed set, for messages */
} name_kinds[] = {
    [GDN_NAME_CLUSTER] = {"cluster", "._-/", "letters, digits, '.', '_', '-' and '/'"},
    [GDN_NAME_TPU] = {"TPU type", "._-", "letters, digits, '.', '_' and '-'"},
    [GDN_NAME_TPU_NAME] = {"TPU name", "._-", "letters, digits, '.', '_' and '-'"},
    [GDN_NAME_JOB] = {"job id", "._-:@+", "letters, digits, '.', '_', '-', ':', '@' and '+'"},
};

int gdn_marin_check_name(enum gdn_marin_name kind, const char *value, struct gdn_err *err)
{
	struct sbuf shown = SBUF_INIT;
	const char *why = NULL;
	size_t len = value ? strlen(value) : 0;
	bool bad_char = false;
	int ret = 0;

	if ((size_t)kind >= ARRAY_SIZE(name_kinds))
		BUG("unknown name kind %d", (int)kind);
	if (!len)
		why = "it is empty";
	else if (value[0] == '-')
		why = "it starts with '-'";
	else if (len > NAME_MAX_LEN)
		why = "it is too long";
	for (size_t i = 0; !why && !bad_char && i < len; i++) {
		unsigned char c = (unsigned char)value[i];

		bad_char = !isalnum(c) && !strchr(name_kinds[kind].extra, c);
	}
	if (why || bad_char) {
		gdn_py_repr(&shown, value ? value : "");
		if (bad_char)
			ret = gdn_err_set(err, GDN_EUSAGE, "invalid %s %s: use only %s",
					  name_kinds[kind].what, shown.buf, name_kinds[kind].shown);
		else
			ret = gdn_err_set(err, GDN_EUSAGE, "invalid %s %s: %s",
					  name_kinds[kind].what, shown.buf, why);
	}
	sbuf_release(&shown);
	return ret;
}

int gdn_backend_check_name(const struct gdn_backend *b, const char *key, enum gdn_marin_name kind,
			   const char *value, struct gdn_err *err)
{
	struct gdn_err sub = GDN_ERR_INIT;

	if (!gdn_marin_check_name(kind, value, &sub))
		return 0;
	return gdn_err_set(err, GDN_ECONFIG, "%s: 'backends.%s.%s': %s", gdn_backend_origin(b, key),
			   b->name, key, sub.msg);
}

/* ---- Python-compatible formatting ---- */

void gdn_py_repr(struct sbuf *out, const char *s)
{
	char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';

	sbuf_addch(out, q);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\\' || c == (unsigned char)q)
			sbuf_addf(out, "\\%c", c);
		else if (c == '\n')
			sbuf_adds(out, "\\n");
		else if (c == '\r')
			sbuf_adds(out, "\\r");
		else if (c == '\t')
			sbuf_adds(out, "\\t");
		else if (c < 0x20 || c == 0x7f)
			sbuf_addf(out, "\\x%02x", c);
		else
			sbuf_addch(out, c);
	}
	sbuf_addch(out, q);
}

void gdn_py_float(struct sbuf *out, double v)
{
	char buf[64];
	int prec, exp10;
	const char *e;

	if (v != v) {
		sbuf_adds(out, "nan");
		return;
	}
	if (v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
		sbuf_adds(out, v > 0 ? "inf" : "-inf");
		return;
	}
	/* The shortest digits that read back as v, as Python's repr does. */
	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
	e = strchr(buf, 'e');
	exp10 = e ? (int)strtol(e + 1, NULL, 10) : 0;
	if (exp10 < -4 || exp10 >= 16) {
		sbuf_adds(out, buf);
		return;
	}
	snprintf(buf, sizeof(buf), "%.*f", prec - 1 - exp10 > 0 ? prec - 1 - exp10 : 0, v);
	sbuf_adds(out, buf);
	if (!strchr(buf, '.'))
		sbuf_adds(out, ".0");
}

/* Python's str.strip() of s: appended to out. */
static void add_stripped(struct sbuf *out, const char *s, size_t len)
{
	while (len && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	sbuf_add(out, s, len);
}

/* ---- the test command ---- */

static const char *const kernel_files[] = {"tests/test_gdn_kernels.py", NULL};
static const char *const layer_files[] = {"tests/test_gdn_layer.py", NULL};
static const char *const both_files[] = {"tests/test_gdn_kernels.py", "tests/test_gdn_layer.py",
					 NULL};

static const char *const *test_files(const char *tests)
{
	if (!tests)
		return NULL;
	if (!strcmp(tests, "kernels"))
		return kernel_files;
	if (!strcmp(tests, "layer"))
		return layer_files;
	if (!strcmp(tests, "both"))
		return both_files;
	return NULL;
}

int gdn_marin_test_command(struct sbuf *out, const char *tests, const char *pytest_args,
			   struct gdn_err *err)
{
	const char *const *files = test_files(tests);
	struct sbuf pytest = SBUF_INIT, extra = SBUF_INIT;

	if (!files)
		return gdn_err_set(err, GDN_EUSAGE,
				   "invalid test selection '%s': expected kernels, layer or both",
				   tests ? tests : "");
	for (size_t i = 0; files[i]; i++)
		sbuf_addf(&pytest, " %s", files[i]);
	sbuf_adds(&pytest, " -v");
	if (pytest_args)
		add_stripped(&extra, pytest_args, strlen(pytest_args));
	if (extra.len)
		sbuf_addf(&pytest, " %s", extra.buf);

	sbuf_adds(out,
		  "cd lib/levanter && if [ -n \"${VIRTUAL_ENV:-}\" ] && "
		  "[ -x \"$VIRTUAL_ENV/bin/python\" ]; then "
		  "uv sync --active --extra=tpu --group test && "
		  "uv pip install --python \"$VIRTUAL_ENV/bin/python\" --index-url " TORCH_CPU_INDEX
		  " --force-reinstall " TORCH_CPU_REQUIREMENT " && "
		  "uv pip install --python \"$VIRTUAL_ENV/bin/python\" transformers && "
		  "EQX_ON_ERROR=nan WANDB_MODE=offline uv run --active pytest");
	sbuf_addf(out, "%s; else ", pytest.buf);
	sbuf_adds(out, "uv sync --extra=tpu --group test && "
		       "uv pip install --python ../../.venv/bin/python --index-url " TORCH_CPU_INDEX
		       " --force-reinstall " TORCH_CPU_REQUIREMENT " && "
		       "uv pip install --python ../../.venv/bin/python transformers && "
		       "EQX_ON_ERROR=nan WANDB_MODE=offline uv run pytest");
	sbuf_addf(out, "%s; fi", pytest.buf);
	sbuf_release(&pytest);
	sbuf_release(&extra);
	return 0;
}

void gdn_marin_test_env(struct strvec *env)
{
	strvec_push(env, "EQX_ON_ERROR=nan");
	strvec_push(env, "WANDB_MODE=offline");
}

/* ---- the profile ---- */

int gdn_marin_parse_profile_env(const char *const *items, struct strvec *pairs, struct gdn_err *err)
{
	struct sbuf item = SBUF_INIT, key = SBUF_INIT, shown = SBUF_INIT;
	int ret = 0;

	for (size_t i = 0; items && items[i] && !ret; i++) {
		const char *eq;

		sbuf_reset(&item);
		add_stripped(&item, items[i], strlen(items[i]));
		if (!item.len)
			continue;
		eq = strchr(item.buf, '=');
		sbuf_reset(&shown);
		if (!eq) {
			gdn_py_repr(&shown, items[i]);
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "invalid --profile-env entry (expected KEY=VALUE): %s",
					  shown.buf);
			break;
		}
		sbuf_reset(&key);
		add_stripped(&key, item.buf, (size_t)(eq - item.buf));
		if (!opt_is_env_name(key.buf, key.len)) {
			gdn_py_repr(&shown, key.buf);
			ret = gdn_err_set(
			    err, GDN_EUSAGE,
			    "invalid --profile-env key %s; expected [A-Za-z_][A-Za-z0-9_]*",
			    shown.buf);
			break;
		}
		strvec_pushf(pairs, "%s=%s", key.buf, eq + 1);
	}
	sbuf_release(&item);
	sbuf_release(&key);
	sbuf_release(&shown);
	return ret;
}

int gdn_marin_ce_implementation(const char *v, const char **out, struct gdn_err *err)
{
	struct sbuf norm = SBUF_INIT, shown = SBUF_INIT;
	int ret = GDN_EUSAGE;

	if (!v || !*v)
		v = "auto"; /* (v or "auto") */
	add_stripped(&norm, v, strlen(v));
	for (size_t i = 0; i < norm.len; i++)
		norm.buf[i] = (char)tolower((unsigned char)norm.buf[i]);
	for (size_t i = 0; ce_impl_choices[i]; i++) {
		if (!strcmp(norm.buf, ce_impl_choices[i])) {
			*out = ce_impl_choices[i];
			ret = 0;
		}
	}
	if (ret) {
		gdn_py_repr(&shown, v);
		gdn_err_set(err, GDN_EUSAGE,
			    "invalid CE implementation %s; expected one of: auto, xla, reference, "
			    "pallas_tpu, pallas_gpu",
			    shown.buf);
	}
	sbuf_release(&norm);
	sbuf_release(&shown);
	return ret;
}

int gdn_marin_ce_bwd_mode(const char *m, const char **out, struct gdn_err *err)
{
	struct sbuf norm = SBUF_INIT, shown = SBUF_INIT;
	int ret = 0;

	if (!m) {
		*out = "pallas";
		return 0;
	}
	add_stripped(&norm, m, strlen(m));
	for (size_t i = 0; i < norm.len; i++)
		norm.buf[i] = norm.buf[i] == '-' ? '_' : (char)tolower((unsigned char)norm.buf[i]);
	if (!norm.len || !strcmp(norm.buf, "default") || !strcmp(norm.buf, "pallas")) {
		*out = "pallas";
	} else if (!strcmp(norm.buf, "xla_streaming") || !strcmp(norm.buf, "xla")) {
		*out = "xla_streaming";
	} else {
		gdn_py_repr(&shown, m);
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "unsupported CE backward mode %s; expected one of pallas, "
				  "xla_streaming",
				  shown.buf);
	}
	sbuf_release(&norm);
	sbuf_release(&shown);
	return ret;
}

int gdn_marin_profile_env(const struct gdn_marin_profile *p, struct strvec *env,
			  struct gdn_err *err)
{
	static const struct {
		const char *name;
		size_t off;
	} optional[] = {
	    {"GDN_PROFILE_BATCH_SIZE", offsetof(struct gdn_marin_profile, batch_size)},
	    {"GDN_PROFILE_CHUNK_SIZE", offsetof(struct gdn_marin_profile, chunk_size)},
	    {"GDN_PROFILE_SEGMENT_SIZE", offsetof(struct gdn_marin_profile, segment_size)},
	    {"GDN_PROFILE_GDN_LAYERS_PER_BLOCK",
	     offsetof(struct gdn_marin_profile, layers_per_block)},
	    {"GDN_PROFILE_GDN_BLOCK_SIZE", offsetof(struct gdn_marin_profile, block_size)},
	};
	struct strvec pairs = STRVEC_INIT;
	const char *impl = NULL, *bwd = NULL;
	int ret;

	ret = gdn_marin_ce_implementation(p->ce_impl, &impl, err);
	if (!ret)
		ret = gdn_marin_ce_bwd_mode(p->ce_bwd, &bwd, err);
	if (!ret)
		ret = gdn_marin_parse_profile_env(p->extra, &pairs, err);
	if (ret)
		goto out;
	strvec_push(env, "EQX_ON_ERROR=nan");
	strvec_pushf(env, "WANDB_MODE=%s", p->wandb_mode);
	strvec_pushf(env, "GDN_PROFILE_SIZE=%s", p->size);
	strvec_pushf(env, "GDN_PROFILE_NUM_STEPS=%ld", p->num_steps);
	strvec_pushf(env, "GDN_PROFILE_PROFILE_START_STEP=%ld", p->profile_start_step);
	strvec_pushf(env, "GDN_PROFILE_PROFILE_NUM_STEPS=%ld", p->profile_num_steps);
	strvec_pushf(env, "GDN_PROFILE_RUN_NAME_PREFIX=%s", p->run_name_prefix);
	strvec_pushf(env, "GDN_PROFILE_TPU_VARIANT=%s", p->tpu);
	for (size_t i = 0; i < ARRAY_SIZE(optional); i++) {
		long v = *(const long *)((const char *)p + optional[i].off);

		if (v != GDN_MARIN_UNSET)
			strvec_pushf(env, "%s=%ld", optional[i].name, v);
	}
	if (p->all_transformer)
		strvec_push(env, "GDN_PROFILE_ALL_TRANSFORMER=1");
	if (strcmp(impl, "auto"))
		strvec_pushf(env, "LEVANTER_FUSED_CE_IMPLEMENTATION=%s", impl);
	strvec_pushf(env, "LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=%s",
		     strcmp(bwd, "xla_streaming") ? "0" : "1");
	strvec_pushv(env, pairs.v);
out:
	strvec_clear(&pairs);
	return ret;
}

void gdn_marin_profile_command(struct sbuf *out, bool dev_tpu, bool dry_run)
{
	const char *sync = dev_tpu ? "uv sync --all-packages --extra=tpu --python=3.11" : "uv sync";
	const char *script = dry_run
				 ? "-m experiments.speedrun.hackable_transformer_gdn.tiny_profile "
				   "--force_run_failed true --dry_run true"
				 : "-m experiments.speedrun.hackable_transformer_gdn.tiny_profile "
				   "--force_run_failed true";

	sbuf_addf(out,
		  "set -e && if [ -n \"${VIRTUAL_ENV:-}\" ] && [ -x \"$VIRTUAL_ENV/bin/python\" ]; "
		  "then %s --active && "
		  "uv pip install --python \"$VIRTUAL_ENV/bin/python\" --index-url " TORCH_CPU_INDEX
		  " --force-reinstall " TORCH_CPU_REQUIREMENT " && "
		  "(uv pip uninstall --python \"$VIRTUAL_ENV/bin/python\" torchvision || true) && "
		  "\"$VIRTUAL_ENV/bin/python\" %s; else ",
		  sync, script);
	sbuf_addf(out,
		  "%s && uv pip install --python .venv/bin/python --index-url " TORCH_CPU_INDEX
		  " --force-reinstall " TORCH_CPU_REQUIREMENT " && "
		  "(uv pip uninstall --python .venv/bin/python torchvision || true) && "
		  ".venv/bin/python %s; fi",
		  sync, script);
}

/* ---- MARIN_PREFIX ---- */

/* Marin's cluster configurations (marin.cluster.config CONFIGS): name -> BUCKET. */
static const struct {
	const char *name, *bucket;
} marin_buckets[] = {
    {"marin-big-run", "marin-us-central2"},
    {"marin-eu-west4", "marin-eu-west4"},
    {"marin-eu-west4-a", "marin-eu-west4"},
    {"marin-eu-west4-vllm", "marin-eu-west4"},
    {"marin-us-central1", "marin-us-central1"},
    {"marin-us-central2", "marin-us-central2"},
    {"marin-us-central2-compress", "marin-us-central2"},
    {"marin-us-central2-vllm", "marin-us-central2"},
    {"marin-us-east1", "marin-us-east1"},
    {"marin-us-east1-d-vllm", "marin-us-east1"},
    {"marin-us-east5", "marin-us-east5"},
    {"marin-us-east5-a", "marin-us-east5"},
    {"marin-us-east5-b-vllm", "marin-us-east5"},
    {"marin-us-west4", "marin-us-west4"},
};

static const char *table_bucket(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(marin_buckets); i++)
		if (!strcmp(marin_buckets[i].name, name))
			return marin_buckets[i].bucket;
	return NULL;
}

/* The bucket a generated infra/<stem>.yaml exports (`export BUCKET="x"`), or NULL. */
static char *file_bucket(const char *path)
{
	struct sbuf text = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *bucket = NULL;
	const char *p;

	if (sbuf_read_file(&text, path, 4 << 20, &err))
		goto out;
	for (p = text.buf; (p = strstr(p, "BUCKET=")); p += 7) {
		const char *v = p + 7, *end;
		char q = *v == '"' || *v == '\'' ? *v : 0;

		if (p > text.buf && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
			continue;
		if (q)
			v++;
		end = v;
		while (*end && (isalnum((unsigned char)*end) || strchr("._-", *end)))
			end++;
		if (end > v && (!q || *end == q)) {
			bucket = xstrndup(v, (size_t)(end - v));
			break;
		}
	}
out:
	sbuf_release(&text);
	return bucket;
}

static bool file_exists(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* marin.cluster.config.find_config_by_region(): the path of the config file, or NULL. */
static char *find_config_path(const char *root, const char *cluster)
{
	static const char *const forms[] = {"%s/infra/marin-%s.yaml", "%s/infra/marin-%s-a.yaml",
					    "%s/infra/marin-%s-b.yaml",
					    "%s/infra/marin-%s-vllm.yaml"};
	const char *region = !strncmp(cluster, "marin-", 6) ? cluster + 6 : cluster;
	char *path = xstrfmt("%s/infra/marin-%s.yaml", root, cluster);

	for (size_t i = 0; i < ARRAY_SIZE(forms) && !file_exists(path); i++) {
		free(path);
		path = xstrfmt(forms[i], root, region);
	}
	if (!file_exists(path))
		FREE_AND_NULL(path);
	return path;
}

void gdn_marin_prefix_env(struct strvec *env, const char *prefix, const char *cluster,
			  const char *root)
{
	char *p = prefix ? xstrdup(prefix) : gdn_marin_default_prefix(cluster, root);

	strvec_pushf(env, "MARIN_PREFIX=%s", p);
	free(p);
}

char *gdn_marin_default_prefix(const char *cluster, const char *root)
{
	char *normalized =
	    !strncmp(cluster, "marin-", 6) ? xstrdup(cluster) : xstrfmt("marin-%s", cluster);
	char *bucket = NULL, *path = NULL, *stem = NULL, *ret = NULL;
	bool files = root && !strchr(cluster, '/');

	/* 1. the configuration named marin-<cluster> */
	if (files) {
		path = xstrfmt("%s/infra/%s.yaml", root, normalized);
		bucket = file_bucket(path);
		FREE_AND_NULL(path);
	}
	if (!bucket && table_bucket(normalized))
		bucket = xstrdup(table_bucket(normalized));
	if (bucket) {
		ret = xstrfmt("gs://%s", bucket);
		goto out;
	}
	/* 2. the configuration file found by region, and its bucket */
	if (files)
		path = find_config_path(root, cluster);
	if (path) {
		const char *base = strrchr(path, '/') + 1;

		stem = xstrndup(base, strlen(base) - strlen(".yaml"));
		bucket = file_bucket(path);
		if (!bucket && table_bucket(stem))
			bucket = xstrdup(table_bucket(stem));
		if (bucket)
			ret = xstrfmt("gs://%s", bucket);
		else if (!strncmp(stem, "marin-", 6))
			ret = xstrfmt("gs://%s", stem);
	}
	/* 3. the v1/v2 convention */
	if (!ret)
		ret = xstrfmt("gs://marin-%s", cluster);
out:
	free(normalized);
	free(bucket);
	free(path);
	free(stem);
	return ret;
}

/* ---- argv of Marin's wrappers ---- */

static void push_env(struct strvec *argv, const char *const *env)
{
	for (size_t i = 0; env && env[i]; i++)
		strvec_pushl(argv, "-e", env[i], NULL);
}

void gdn_marin_ray_run_argv(struct strvec *argv, const char *cluster, const char *tpu,
			    const char *const *env, const char *submission_id, bool no_wait,
			    const char *const *cmd)
{
	strvec_pushl(argv, GDN_MARIN_RAY_RUN, "--cluster", cluster, NULL);
	if (tpu)
		strvec_pushl(argv, "--tpu", tpu, NULL);
	push_env(argv, env);
	if (submission_id)
		strvec_pushl(argv, "--submission-id", submission_id, NULL);
	if (no_wait)
		strvec_push(argv, "--no_wait");
	strvec_push(argv, "--");
	strvec_pushv(argv, cmd);
}

void gdn_marin_wait_job_argv(struct strvec *argv, const char *cluster, const char *id,
			     double poll_s, double timeout_s, bool show_logs, long tail,
			     const char *grep)
{
	struct sbuf num = SBUF_INIT;

	strvec_pushl(argv, GDN_MARIN_CLUSTER_CLI, "--cluster", cluster, "wait-job", id, "--poll",
		     NULL);
	gdn_py_float(&num, poll_s);
	strvec_push(argv, num.buf);
	if (timeout_s >= 0) {
		sbuf_reset(&num);
		gdn_py_float(&num, timeout_s);
		strvec_pushl(argv, "--timeout", num.buf, NULL);
	}
	if (show_logs)
		strvec_push(argv, "--show-logs");
	strvec_push(argv, "--tail");
	strvec_pushf(argv, "%ld", tail);
	if (grep)
		strvec_pushl(argv, "--grep", grep, NULL);
	sbuf_release(&num);
}

void gdn_marin_job_logs_argv(struct strvec *argv, const char *cluster, const char *id, long tail,
			     const char *grep)
{
	strvec_pushl(argv, GDN_MARIN_CLUSTER_CLI, "--cluster", cluster, "job-logs", "-n", NULL);
	strvec_pushf(argv, "%ld", tail);
	if (grep)
		strvec_pushl(argv, "-g", grep, NULL);
	strvec_push(argv, id);
}

void gdn_marin_stop_job_argv(struct strvec *argv, const char *cluster, const char *id)
{
	strvec_pushl(argv, GDN_MARIN_CLUSTER_CLI, "--cluster", cluster, "stop-job", id, NULL);
}

void gdn_marin_list_jobs_argv(struct strvec *argv, const char *cluster)
{
	strvec_pushl(argv, GDN_MARIN_CLUSTER_CLI, "--cluster", cluster, "list-jobs", NULL);
}

void gdn_marin_allocate_argv(struct strvec *argv, const char *cluster, const char *tpu_name,
			     bool verbose, const char *sync_path, const char *tpu_type)
{
	strvec_pushl(argv, GDN_MARIN_DEV_TPU, "--cluster", cluster, "--tpu-name", tpu_name, NULL);
	if (verbose)
		strvec_push(argv, "--verbose");
	strvec_push(argv, "allocate");
	if (sync_path)
		strvec_pushl(argv, "--sync-path", sync_path, NULL);
	if (tpu_type)
		strvec_pushl(argv, "--tpu-type", tpu_type, NULL);
}

void gdn_marin_execute_argv(struct strvec *argv, const char *cluster, const char *tpu_name,
			    const char *const *env, bool no_sync, const char *cmd)
{
	strvec_pushl(argv, GDN_MARIN_DEV_TPU, "--cluster", cluster, "--tpu-name", tpu_name,
		     "execute", NULL);
	push_env(argv, env);
	if (no_sync)
		strvec_push(argv, "--no-sync");
	strvec_pushl(argv, "--", cmd, NULL);
}

/* ---- output parsing ---- */

static const char *memmem_s(const char *hay, size_t len, const char *needle)
{
	return memmem(hay, len, needle, strlen(needle));
}

static bool py_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

char *gdn_ray_parse_submission_id(const char *text, size_t len)
{
	static const char marin[] = "Job submitted with ID:";
	static const char plain_tail[] = "' submitted successfully";
	const char *p = memmem_s(text, len, marin), *end = text + len;

	if (p) {
		const char *id = p + strlen(marin), *e;

		while (id < end && py_space(*id))
			id++;
		for (e = id; e < end && !py_space(*e); e++)
			;
		if (e > id && e - id <= GDN_RAY_ID_MAX && !memchr(id, '\0', (size_t)(e - id)))
			return xstrndup(id, (size_t)(e - id));
		return NULL;
	}
	/* Job '([^']+)' submitted successfully: the first such line */
	for (p = text; (p = memmem(p, (size_t)(end - p), "Job '", 5)); p += 5) {
		const char *id = p + 5, *q = memchr(id, '\'', (size_t)(end - id));

		if (!q || q == id)
			continue;
		if ((size_t)(end - q) >= strlen(plain_tail) &&
		    !memcmp(q, plain_tail, strlen(plain_tail)) && q - id <= GDN_RAY_ID_MAX &&
		    !memchr(id, '\0', (size_t)(q - id)))
			return xstrndup(id, (size_t)(q - id));
	}
	return NULL;
}

bool gdn_ray_state_from_name(const char *s, size_t len, enum gdn_job_state *out)
{
	static const struct {
		const char *name;
		enum gdn_job_state state;
	} states[] = {
	    {"PENDING", GDN_JOB_PENDING}, {"RUNNING", GDN_JOB_RUNNING},
	    {"STOPPED", GDN_JOB_STOPPED}, {"SUCCEEDED", GDN_JOB_SUCCEEDED},
	    {"FAILED", GDN_JOB_FAILED},
	};

	for (size_t i = 0; i < ARRAY_SIZE(states); i++) {
		if (strlen(states[i].name) == len && !memcmp(states[i].name, s, len)) {
			*out = states[i].state;
			return true;
		}
	}
	return false;
}

static void set_state(struct gdn_job_status *st, enum gdn_job_state s, const char *native,
		      size_t len)
{
	st->state = s;
	st->final = s == GDN_JOB_SUCCEEDED || s == GDN_JOB_FAILED || s == GDN_JOB_STOPPED;
	if (len >= sizeof(st->native))
		len = sizeof(st->native) - 1;
	memcpy(st->native, native, len);
	st->native[len] = '\0';
}

static void set_message(struct gdn_job_status *st, const char *s, size_t len)
{
	size_t n = 0;

	while (len && py_space(*s)) {
		s++;
		len--;
	}
	while (len && py_space(s[len - 1]))
		len--;
	for (size_t i = 0; i < len && n + 1 < sizeof(st->message); i++)
		st->message[n++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	st->message[n] = '\0';
}

/* The upper-case word at s (A-Z only), its length. */
static size_t upper_word(const char *s, const char *end)
{
	const char *e = s;

	while (e < end && *e >= 'A' && *e <= 'Z')
		e++;
	return (size_t)(e - s);
}

/* Whether `Job 'ID'` at p names the job we want (id NULL: any). Sets *after. */
static bool job_quoted(const char *p, const char *end, const char *prefix, const char *id,
		       const char **after)
{
	const char *q, *name = p + strlen(prefix);

	if ((size_t)(end - p) < strlen(prefix) || memcmp(p, prefix, strlen(prefix)))
		return false;
	q = memchr(name, '\'', (size_t)(end - name));
	if (!q || q == name)
		return false;
	if (id && (strlen(id) != (size_t)(q - name) || memcmp(id, name, (size_t)(q - name))))
		return false;
	*after = q + 1;
	return true;
}

bool gdn_ray_parse_status_line(const char *line, size_t len, const char *id,
			       struct gdn_job_status *st)
{
	static const struct {
		const char *tail;
		enum gdn_job_state state;
		const char *native;
	} finals[] = {
	    {" succeeded", GDN_JOB_SUCCEEDED, "SUCCEEDED"},
	    {" was stopped", GDN_JOB_STOPPED, "STOPPED"},
	    {" failed", GDN_JOB_FAILED, "FAILED"},
	};
	const char *end = line + len, *p, *after;
	enum gdn_job_state s;
	size_t n;

	if ((p = memmem_s(line, len, "Status message:"))) {
		set_message(st, p + 15, (size_t)(end - p - 15));
		return false;
	}
	if ((p = memmem_s(line, len, "Job has not exited yet. Status: "))) {
		p += 32;
		n = upper_word(p, end);
		if (gdn_ray_state_from_name(p, n, &s)) {
			set_state(st, s, p, n);
			return true;
		}
		return false;
	}
	for (p = line; (p = memmem(p, (size_t)(end - p), "Status for job '", 16)); p++) {
		if (!job_quoted(p, end, "Status for job '", id, &after))
			continue;
		if (end - after < 2 || after[0] != ':' || after[1] != ' ')
			continue;
		n = upper_word(after + 2, end);
		if (gdn_ray_state_from_name(after + 2, n, &s)) {
			set_state(st, s, after + 2, n);
			return true;
		}
	}
	for (p = line; (p = memmem(p, (size_t)(end - p), "Job '", 5)); p++) {
		if (!job_quoted(p, end, "Job '", id, &after))
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(finals); i++) {
			size_t tl = strlen(finals[i].tail);

			if ((size_t)(end - after) >= tl && !memcmp(after, finals[i].tail, tl) &&
			    (after + tl == end || !isalnum((unsigned char)after[tl]))) {
				set_state(st, finals[i].state, finals[i].native,
					  strlen(finals[i].native));
				return true;
			}
		}
	}
	return false;
}

bool gdn_marin_parse_wait_line(const char *line, size_t len, const char *id,
			       struct gdn_job_status *st)
{
	const char *end = line + len, *p, *name, *name_end;
	enum gdn_job_state s;
	size_t n;

	if (!len || line[0] != '[')
		return false;
	p = memchr(line, ']', len);
	if (!p || end - p < 2 || p[1] != ' ')
		return false;
	name = p + 2;
	for (name_end = name; name_end < end && *name_end != ' '; name_end++)
		;
	if (name_end == name || end - name_end < 8 || memcmp(name_end, " status=", 8))
		return false;
	if (id && (strlen(id) != (size_t)(name_end - name) ||
		   memcmp(id, name, (size_t)(name_end - name))))
		return false;
	p = name_end + 8;
	n = upper_word(p, end);
	if (!gdn_ray_state_from_name(p, n, &s))
		return false;
	set_state(st, s, p, n);
	set_message(st, p + n, (size_t)(end - p - n));
	return true;
}

int gdn_ray_parse_job_list(const char *text, size_t len, const char *id, struct gdn_job_status *st,
			   struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = NULL, *job;
	const char *start = memchr(text, '[', len);
	size_t i;
	int ret = GDN_ENOTFOUND;

	/* cluster.py may log lines before the JSON document */
	if (start)
		doc = json_loadb(start, len - (size_t)(start - text),
				 JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_array(doc)) {
		ret = gdn_err_set(err, GDN_EPARSE, "list-jobs output is not a JSON list of jobs");
		goto out;
	}
	json_array_foreach(doc, i, job)
	{
		const char *sid = json_string_value(json_object_get(job, "submission_id"));
		const char *status = json_string_value(json_object_get(job, "status"));
		const char *message = json_string_value(json_object_get(job, "message"));
		json_t *code = json_object_get(job, "driver_exit_code");
		enum gdn_job_state s = GDN_JOB_UNKNOWN;

		if (!sid || strcmp(sid, id))
			continue;
		if (status && !gdn_ray_state_from_name(status, strlen(status), &s))
			s = GDN_JOB_UNKNOWN;
		set_state(st, s, status ? status : "", status ? strlen(status) : 0);
		if (message)
			set_message(st, message, strlen(message));
		if (json_is_integer(code) && json_integer_value(code) >= 0 &&
		    json_integer_value(code) < 256)
			st->exit_code = (int)json_integer_value(code);
		ret = 0;
		break;
	}
	if (ret == GDN_ENOTFOUND)
		gdn_err_set(err, GDN_ENOTFOUND, "job '%s' is not in the list of jobs", id);
out:
	json_decref(doc);
	return ret;
}
