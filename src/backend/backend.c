/*
 * The backend registry and what every type shares: opening a backend by
 * name from configuration or from a spec, per-backend configuration lookups, echoing and
 * running programs, following a growing log, the poll loop of `wait`, and
 * the checks of names that reach ssh, remote shells and batch scripts.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "backend_impl.h"

/*
 * The registry: one row per type. A configured backend names its type in
 * backends.<name>.type; a type marked builtin also works by its own name
 * without configuration.
 */
static const struct gdn_backend_ops *const backend_types[] = {
    &gdn_backend_local_ops, &gdn_backend_ssh_ops,    &gdn_backend_slurm_ops,
    &gdn_backend_ray_ops,   &gdn_backend_devtpu_ops, &gdn_backend_iris_ops,
};

#define NAME_MAX_LEN  64
#define MSG_VALUE_MAX 80

const char *const *gdn_backend_types(void)
{
	static const char *names[ARRAY_SIZE(backend_types) + 1];

	for (size_t i = 0; i < ARRAY_SIZE(backend_types); i++)
		names[i] = backend_types[i]->type;
	return names;
}

static const struct gdn_backend_ops *find_type(const char *type)
{
	for (size_t i = 0; i < ARRAY_SIZE(backend_types); i++)
		if (!strcmp(backend_types[i]->type, type))
			return backend_types[i];
	return NULL;
}

const char *gdn_job_state_name(enum gdn_job_state s)
{
	switch (s) {
	case GDN_JOB_PENDING:
		return "pending";
	case GDN_JOB_RUNNING:
		return "running";
	case GDN_JOB_SUCCEEDED:
		return "succeeded";
	case GDN_JOB_FAILED:
		return "failed";
	case GDN_JOB_STOPPED:
		return "stopped";
	case GDN_JOB_TIMEOUT:
		return "timeout";
	case GDN_JOB_UNKNOWN:
		break;
	}
	return "unknown";
}

void gdn_job_status_set(struct gdn_job_status *st, enum gdn_job_state state, const char *native,
			int exit_code)
{
	st->state = state;
	st->final = state == GDN_JOB_SUCCEEDED || state == GDN_JOB_FAILED ||
		    state == GDN_JOB_STOPPED || state == GDN_JOB_TIMEOUT;
	st->exit_code = exit_code;
	snprintf(st->native, sizeof(st->native), "%s", native ? native : "");
}

void gdn_spec_command(const struct gdn_run_spec *spec, struct sbuf *out)
{
	if (spec->shell) {
		sbuf_adds(out, spec->shell);
		return;
	}
	for (size_t i = 0; spec->argv && spec->argv[i]; i++) {
		if (i)
			sbuf_addch(out, ' ');
		sbuf_add_shell_quoted(out, spec->argv[i]);
	}
}

void gdn_job_status_from_proc(struct gdn_job_status *st, const struct gdn_proc *p,
			      const char *ok_name)
{
	switch (p->status_kind) {
	case GDN_PROC_EXITED:
		if (p->code)
			gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", p->code);
		else
			gdn_job_status_set(st, GDN_JOB_SUCCEEDED, ok_name, 0);
		break;
	case GDN_PROC_SIGNALED:
		gdn_job_status_set(st, GDN_JOB_FAILED, "FAILED", 128 + p->signo);
		break;
	case GDN_PROC_TIMEOUT:
	case GDN_PROC_IDLE:
		gdn_job_status_set(st, GDN_JOB_TIMEOUT, "TIMEOUT", 124);
		break;
	default:
		gdn_job_status_set(st, GDN_JOB_STOPPED, "STOPPED", gdn_proc_exit_code(p));
		break;
	}
}

int gdn_job_exit_code(const struct gdn_job_status *st)
{
	switch (st->state) {
	case GDN_JOB_SUCCEEDED:
		return 0;
	case GDN_JOB_TIMEOUT:
		return 124;
	case GDN_JOB_STOPPED:
		return gdn_proc_interrupted() ? 128 + gdn_proc_interrupted() : 1;
	case GDN_JOB_FAILED:
		if (st->exit_code > 0 && st->exit_code < 256 && !strcmp(st->native, "FAILED"))
			return st->exit_code;
		return 1;
	default:
		return 1;
	}
}

/* ---- names ---- */

/* 'VALUE' for a message: control characters escaped, long values cut. */
static void add_value(struct sbuf *sb, const char *s)
{
	size_t n = 0;

	sbuf_addch(sb, '\'');
	for (; *s && n < MSG_VALUE_MAX; s++, n++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\n')
			sbuf_adds(sb, "\\n");
		else if (c < 0x20 || c == 0x7f)
			sbuf_addf(sb, "\\x%02x", c);
		else
			sbuf_addch(sb, c);
	}
	if (*s)
		sbuf_adds(sb, "...");
	sbuf_addch(sb, '\'');
}

static int bad_name(int code, struct gdn_err *err, const char *what, const char *value,
		    const char *why)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	add_value(&sb, value);
	ret = gdn_err_set(err, code, "invalid %s %s: %s", what, sb.buf, why);
	sbuf_release(&sb);
	return ret;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return true;
	return false;
}

static bool all_of(const char *s, const char *extra)
{
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

int gdn_check_host(const char *value, const char *what, int code, struct gdn_err *err)
{
	if (!value || !*value)
		return gdn_err_set(err, code, "%s is empty", what);
	if (value[0] == '-')
		return bad_name(code, err, what, value,
				"it starts with '-' (ssh would take it for an option)");
	if (strlen(value) > 255)
		return bad_name(code, err, what, value, "longer than 255 bytes");
	if (!all_of(value, ".-_:%[]"))
		return bad_name(code, err, what, value,
				"a host is letters, digits and . - _ : % [ ] only");
	return 0;
}

int gdn_check_user(const char *value, const char *what, int code, struct gdn_err *err)
{
	if (!value || !*value)
		return gdn_err_set(err, code, "%s is empty", what);
	if (value[0] == '-')
		return bad_name(code, err, what, value,
				"it starts with '-' (ssh would take it for an option)");
	if (strlen(value) > 64)
		return bad_name(code, err, what, value, "longer than 64 bytes");
	if (!all_of(value, ".-_"))
		return bad_name(code, err, what, value,
				"a user name is letters, digits and . - _ only");
	return 0;
}

int gdn_check_text(const char *value, const char *what, int code, struct gdn_err *err)
{
	if (!value)
		return gdn_err_set(err, code, "%s is missing", what);
	if (has_control(value))
		return bad_name(code, err, what, value,
				"it contains a newline or another control character");
	if (strlen(value) > 4096)
		return bad_name(code, err, what, value, "longer than 4096 bytes");
	return 0;
}

int gdn_check_job_id(const char *value, int code, struct gdn_err *err)
{
	if (!value || !*value)
		return gdn_err_set(err, code, "the job id is empty");
	if (value[0] == '-' || value[0] == '.')
		return bad_name(code, err, "job id", value,
				"a job id starts with a letter, a digit or '_'");
	if (strlen(value) > 100)
		return bad_name(code, err, "job id", value, "longer than 100 bytes");
	if (!all_of(value, "._-"))
		return bad_name(code, err, "job id", value,
				"a job id is letters, digits and . _ - only");
	return 0;
}

static bool valid_backend_name(const char *name)
{
	return name && *name && name[0] != '-' && strlen(name) <= NAME_MAX_LEN &&
	       all_of(name, "_-");
}

/* ---- opening ---- */

/* Open `name` as a backend of type ops; spec_config (owned, may be NULL) overrides cfg. */
static int open_type(const struct gdn_config *cfg, const struct gdn_backend_ops *ops,
		     const char *name, struct gdn_config *spec_config, struct gdn_backend **out,
		     struct gdn_err *err)
{
	struct gdn_backend *b = xcalloc(1, sizeof(*b));
	int ret = 0;

	b->ops = ops;
	b->name = xstrdup(name);
	b->config = cfg;
	b->spec_config = spec_config;
	if (ops->open)
		ret = ops->open(b, err);
	if (ret) {
		gdn_backend_free(b);
		b = NULL;
	}
	*out = b;
	return ret;
}

static void known_names(const struct strvec *configured, struct sbuf *out)
{
	size_t n = 0;

	for (size_t i = 0; i < configured->nr; i++)
		sbuf_addf(out, "%s%s", n++ ? ", " : "", configured->v[i]);
	for (size_t i = 0; i < ARRAY_SIZE(backend_types); i++)
		if (backend_types[i]->builtin &&
		    !strvec_contains(configured, backend_types[i]->type))
			sbuf_addf(out, "%s%s", n++ ? ", " : "", backend_types[i]->type);
}

/* The type of `name`: configured (backends.NAME.type, or a configured built-in) or built in. */
static int configured_type(const struct gdn_config *cfg, const char *name,
			   const struct gdn_backend_ops **ops, struct gdn_err *err)
{
	struct strvec names = STRVEC_INIT;
	struct sbuf key = SBUF_INIT, list = SBUF_INIT;
	int ret = 0;

	gdn_config_map_names(cfg, "backends", &names);
	if (strvec_contains(&names, name)) {
		const char *type;

		sbuf_addf(&key, "backends.%s.type", name);
		type = gdn_config_str(cfg, key.buf);
		if ((!type || !*type) && find_type(name) && find_type(name)->builtin)
			type = name; /* backends.local.workdir: the built-in one, configured */
		if (!type || !*type) {
			sbuf_adds(&list, "");
			for (const char *const *t = gdn_backend_types(); *t; t++)
				sbuf_addf(&list, "%s%s", list.len ? ", " : "", *t);
			ret = gdn_err_set(err, GDN_ECONFIG,
					  "backend '%s': '%s' is not set (one of %s)", name,
					  key.buf, list.buf);
			goto out;
		}
		*ops = find_type(type);
		if (!*ops) {
			const struct gdn_cfg_value *v = gdn_config_get(cfg, key.buf);

			ret = gdn_err_set(err, GDN_ECONFIG,
					  "%s: backend type '%s' of '%s' is not available in "
					  "this build",
					  v ? v->origin : key.buf, type, name);
			goto out;
		}
	} else {
		*ops = find_type(name);
		if (!*ops || !(*ops)->builtin) {
			known_names(&names, &list);
			ret = gdn_err_set(err, GDN_ENOTFOUND, "unknown backend '%s' (known: %s)",
					  name, list.buf);
			goto out;
		}
	}
out:
	strvec_clear(&names);
	sbuf_release(&key);
	sbuf_release(&list);
	return ret;
}

int gdn_backend_open(const struct gdn_config *cfg, const char *name, struct gdn_backend **out,
		     struct gdn_err *err)
{
	const struct gdn_backend_ops *ops = NULL;
	int ret;

	*out = NULL;
	if (!valid_backend_name(name))
		return bad_name(GDN_EUSAGE, err, "backend name", name ? name : "",
				"a backend name is letters, digits, '_' and '-'");
	ret = configured_type(cfg, name, &ops, err);
	if (!ret)
		ret = open_type(cfg, ops, name, NULL, out, err);
	return ret;
}

int gdn_backend_open_spec(const struct gdn_config *cfg, const struct gdn_backend_spec *spec,
			  struct gdn_backend **out, struct gdn_err *err)
{
	const struct gdn_backend_ops *ops = NULL;
	struct gdn_config *own = NULL;
	struct sbuf key = SBUF_INIT;
	const char *origin = spec->origin ? spec->origin : "spec";
	int ret = 0;

	*out = NULL;
	if (!valid_backend_name(spec->name)) {
		ret = bad_name(GDN_EUSAGE, err, "backend name", spec->name ? spec->name : "",
			       "a backend name is letters, digits, '_' and '-'");
		goto out;
	}
	own = xcalloc(1, sizeof(*own));
	gdn_config_init(own, cfg->schema, cfg->schema_nr);
	for (size_t i = 0; i < spec->options_nr && !ret; i++) {
		const struct gdn_backend_option *opt = &spec->options[i];

		if (!opt->value)
			continue;
		sbuf_reset(&key);
		sbuf_addf(&key, "backends.%s.%s", spec->name, opt->key);
		ret = gdn_config_set(own, key.buf, opt->value, GDN_SRC_CMDLINE,
				     opt->origin ? opt->origin : origin, err);
		if (ret)
			ret = err->code = GDN_EUSAGE; /* the caller's value (a flag's) */
	}
	if (ret)
		goto out;
	if (!spec->type) {
		ret = configured_type(cfg, spec->name, &ops, err);
	} else {
		ops = find_type(spec->type);
		if (!ops)
			ret = gdn_err_set(err, GDN_ECONFIG,
					  "%s: backend type '%s' of '%s' is not available in "
					  "this build",
					  origin, spec->type, spec->name);
	}
	if (!ret) {
		ret = open_type(cfg, ops, spec->name, own, out, err);
		own = NULL;
	}
out:
	if (own) {
		gdn_config_release(own);
		free(own);
	}
	sbuf_release(&key);
	return ret;
}

void gdn_backend_free(struct gdn_backend *b)
{
	if (!b)
		return;
	if (b->ops && b->ops->free_priv)
		b->ops->free_priv(b);
	if (b->spec_config) {
		gdn_config_release(b->spec_config);
		free(b->spec_config);
	}
	free(b->name);
	free(b);
}

/* ---- configuration ---- */

static const struct gdn_cfg_value *backend_value(const struct gdn_backend *b, const char *key,
						 const struct gdn_cfg_key **schema)
{
	struct sbuf full = SBUF_INIT;
	const struct gdn_cfg_value *v;

	sbuf_addf(&full, "backends.%s.%s", b->name, key);
	v = b->spec_config ? gdn_config_get(b->spec_config, full.buf) : NULL;
	if (!v)
		v = gdn_config_get(b->config, full.buf);
	if (schema)
		*schema = gdn_config_schema_find(b->config, full.buf);
	sbuf_release(&full);
	return v;
}

const char *gdn_backend_setting(const struct gdn_backend *b, const char *key)
{
	const struct gdn_cfg_value *v = backend_value(b, key, NULL);

	return v ? v->str : NULL;
}

const struct strvec *gdn_backend_setting_list(const struct gdn_backend *b, const char *key)
{
	static const struct strvec empty = STRVEC_INIT;
	const struct gdn_cfg_value *v = backend_value(b, key, NULL);

	return v && v->schema && v->schema->type == GDN_CFG_LIST ? &v->list : &empty;
}

const char *gdn_backend_str(const struct gdn_backend *b, const char *key)
{
	const struct gdn_cfg_key *e = NULL;
	const struct gdn_cfg_value *v = backend_value(b, key, &e);
	const char *s = v ? v->str : e ? e->defval : NULL;

	return s && *s ? s : NULL;
}

long long gdn_backend_int(const struct gdn_backend *b, const char *key, long long fallback)
{
	const struct gdn_cfg_key *e = NULL;
	const struct gdn_cfg_value *v = backend_value(b, key, &e);
	long n;

	if (v)
		return v->str[0] ? v->i : fallback;
	if (!e || !e->defval)
		return fallback;
	switch (e->type) {
	case GDN_CFG_INT:
		return opt_parse_long(e->defval, &n) ? fallback : n;
	case GDN_CFG_DURATION:
		return opt_parse_duration_ms(e->defval, &n) ? fallback : n;
	case GDN_CFG_BOOL:
		return !strcasecmp(e->defval, "true") || !strcasecmp(e->defval, "yes") ||
		       !strcasecmp(e->defval, "on") || !strcmp(e->defval, "1");
	default:
		return fallback;
	}
}

const struct strvec *gdn_backend_list(const struct gdn_backend *b, const char *key)
{
	static const struct strvec empty = STRVEC_INIT;
	const struct gdn_cfg_value *v = backend_value(b, key, NULL);

	return v ? &v->list : &empty;
}

const char *gdn_backend_origin(const struct gdn_backend *b, const char *key)
{
	const struct gdn_cfg_value *v = backend_value(b, key, NULL);

	return v ? v->origin : "default";
}

int gdn_backend_config_error(const struct gdn_backend *b, const char *key, struct gdn_err *err,
			     const char *fmt, ...)
{
	struct sbuf msg = SBUF_INIT;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	sbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	if (backend_value(b, key, NULL))
		ret = gdn_err_set(err, GDN_ECONFIG, "%s: 'backends.%s.%s' %s",
				  gdn_backend_origin(b, key), b->name, key, msg.buf);
	else
		ret = gdn_err_set(err, GDN_ECONFIG, "'backends.%s.%s' %s", b->name, key, msg.buf);
	sbuf_release(&msg);
	return ret;
}

const char *gdn_backend_program(const struct gdn_backend *b, const char *key, const char *fallback)
{
	struct sbuf full = SBUF_INIT;
	const struct gdn_cfg_key *e;
	const char *s;

	sbuf_addf(&full, "programs.%s", key);
	e = gdn_config_schema_find(b->config, full.buf);
	s = e ? gdn_config_str(b->config, full.buf) : NULL;
	if (e && !gdn_config_get(b->config, full.buf))
		s = e->defval;
	sbuf_release(&full);
	return s && *s ? s : fallback;
}

char *gdn_backend_local_path(const char *path, const char *base)
{
	const char *home = getenv("HOME");

	if ((!strcmp(path, "~") || !strncmp(path, "~/", 2)) && home && *home)
		return xstrfmt("%s%s", home, path + 1);
	if (path[0] != '/' && base && *base)
		return xstrfmt("%s/%s", base, path);
	return xstrdup(path);
}

const char *gdn_backend_second_tree_refusal(const struct gdn_backend *b)
{
	const char *type = b->ops->type, *v;

	if (!strcmp(type, "local"))
		return NULL;
	if (!strcmp(type, "ssh")) {
		v = gdn_backend_str(b, "sync");
		return v && !strcmp(v, "rsync")
			   ? NULL
			   : "without sync: rsync it runs in a fixed remote workdir that gdnctl "
			     "does not copy to";
	}
	if (!strcmp(type, "slurm")) {
		/* with no workdir the jobs start where gdnctl runs, whatever the tree */
		v = gdn_backend_str(b, "workdir");
		return v && v[0] != '/' && v[0] != '~'
			   ? NULL
			   : "its jobs run in a fixed directory: set its workdir relative to the "
			     "repository (workdir: .)";
	}
	if (!strcmp(type, "ray")) {
		v = gdn_backend_str(b, "cli");
		return !v || !strcmp(v, "marin")
			   ? NULL
			   : "the plain Ray CLI (cli: ray) does not upload the tree";
	}
	if (!strcmp(type, "iris")) /* job run bundles the tree it runs in */
		return NULL;
	if (!strcmp(type, "dev-tpu"))
		return "dev_tpu.py execute syncs every tree to one remote directory";
	return "it cannot run two trees side by side";
}

/* ---- events and programs ---- */

void gdn_backend_event(struct gdn_backend *b, enum gdn_backend_event ev, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (!b->on_event)
		return;
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	gdn_secret_mask(&sb);
	b->on_event(ev, sb.buf, b->event_payload);
	sbuf_release(&sb);
}

void gdn_backend_echo(struct gdn_backend *b, enum gdn_backend_event ev, const char *const *env,
		      const char *const *argv)
{
	struct sbuf sb = SBUF_INIT;
	bool any_env = false;

	if (!b->on_event || (ev == GDN_EV_POLL && b->quiet_polls))
		return;
	for (size_t i = 0; env && env[i]; i++) {
		if (!strchr(env[i], '='))
			continue;
		if (!any_env)
			sbuf_adds(&sb, "env ");
		any_env = true;
		gdn_argv_format(&sb, (const char *const[]){env[i], NULL});
		sbuf_addch(&sb, ' ');
	}
	gdn_argv_format(&sb, argv);
	gdn_secret_mask(&sb);
	b->on_event(ev, sb.buf, b->event_payload);
	sbuf_release(&sb);
}

void gdn_backend_register_secrets(const char *const *env)
{
	struct sbuf q = SBUF_INIT;

	for (size_t i = 0; env && env[i]; i++) {
		const char *eq = strchr(env[i], '='), *v;

		if (!eq || !gdn_secret_name(env[i], (size_t)(eq - env[i])) || !eq[1])
			continue;
		v = eq + 1;
		gdn_secret_add_value(v);
		if (!strchr(v, '\''))
			continue;
		/* as it reads inside '...' once quoted for a shell (twice: in an echo) */
		sbuf_reset(&q);
		for (const char *p = v; *p; p++)
			sbuf_adds(&q, *p == '\'' ? "'\\''" : (char[]){*p, 0});
		gdn_secret_add_value(q.buf);
		sbuf_reset(&q);
		for (const char *p = v; *p; p++)
			sbuf_adds(&q, *p == '\'' ? "'\\''\\'''\\''" : (char[]){*p, 0});
		gdn_secret_add_value(q.buf);
	}
	sbuf_release(&q);
}

int gdn_backend_spawn(struct gdn_backend *b, enum gdn_backend_event ev, struct gdn_proc *p,
		      struct gdn_err *err)
{
	gdn_backend_echo(b, ev, p->env, p->argv);
	if (b->dry_run) {
		p->status_kind = GDN_PROC_NOT_RUN;
		return 0;
	}
	return gdn_proc_run(p, err);
}

void gdn_backend_first_line(const struct sbuf *text, struct sbuf *out)
{
	const char *s = text->buf, *end = text->buf + text->len;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end;
		const char *a = s;

		while (a < e && isspace((unsigned char)*a))
			a++;
		while (e > a && isspace((unsigned char)e[-1]))
			e--;
		if (e > a) {
			size_t n = (size_t)(e - a);

			for (size_t i = 0; i < n && i < 200; i++)
				sbuf_addch(out, ((unsigned char)a[i] < 0x20) ? ' ' : a[i]);
			if (n > 200)
				sbuf_adds(out, "...");
			return;
		}
		s = nl ? nl + 1 : end;
	}
	sbuf_adds(out, "no output");
}

void gdn_format_duration(long long ms, struct sbuf *out)
{
	long long s = ms < 0 ? 0 : ms / 1000;

	if (s < 60 && ms > 0 && ms % 1000) {
		/* a time under a minute keeps its milliseconds: "0.05s", not "0s" */
		sbuf_addf(out, "%lld.%03lld", s, ms % 1000);
		while (out->buf[out->len - 1] == '0')
			sbuf_setlen(out, out->len - 1);
		sbuf_addch(out, 's');
	} else if (s < 60)
		sbuf_addf(out, "%llds", s);
	else if (s < 3600)
		sbuf_addf(out, "%lldm%02llds", s / 60, s % 60);
	else
		sbuf_addf(out, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
}

void gdn_format_elapsed(long long ms, struct sbuf *out)
{
	gdn_format_duration(ms < 0 ? 0 : ms / 1000 * 1000, out);
}

void gdn_emit_lines(const char *buf, size_t len, long tail, gdn_line_fn on_line, void *payload)
{
	size_t start = 0, end = len;
	struct sbuf line = SBUF_INIT;

	if (!on_line)
		return;
	if (end && buf[end - 1] == '\n')
		end--;
	if (tail > 0) {
		long seen = 0;
		size_t i = end;

		while (i > 0) {
			if (buf[i - 1] == '\n' && ++seen == tail)
				break;
			i--;
		}
		start = i;
	}
	while (start < end || (start == end && end < len)) {
		const char *nl = memchr(buf + start, '\n', end - start);
		size_t e = nl ? (size_t)(nl - buf) : end;

		sbuf_reset(&line);
		sbuf_add(&line, buf + start, e - start);
		if (on_line(line.buf, line.len, payload))
			break;
		start = e + 1;
		if (!nl)
			break;
	}
	sbuf_release(&line);
}

/* ---- following a log ---- */

static void follow_deliver(struct gdn_follow *f)
{
	if (!f->stopped && f->on_line && f->on_line(f->partial.buf, f->partial.len, f->payload))
		f->stopped = true;
	sbuf_reset(&f->partial);
}

void gdn_follow_feed(struct gdn_follow *f, const char *buf, size_t len)
{
	f->offset += (long long)len;
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t take = nl ? (size_t)(nl - buf) : len;

		if (take > GDN_PROC_LINE_MAX - f->partial.len) {
			take = GDN_PROC_LINE_MAX - f->partial.len;
			nl = NULL;
		}
		sbuf_add(&f->partial, buf, take);
		buf += take;
		len -= take;
		if (nl) {
			buf++;
			len--;
		}
		if (nl || f->partial.len == GDN_PROC_LINE_MAX)
			follow_deliver(f);
	}
}

void gdn_follow_flush(struct gdn_follow *f)
{
	if (f->partial.len)
		follow_deliver(f);
}

void gdn_follow_release(struct gdn_follow *f)
{
	sbuf_release(&f->partial);
}

/* ---- waiting ---- */

static int interrupted(struct gdn_backend *b, const char *job_id, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_EINTR, "interrupted while waiting for job %s on %s", job_id,
			   b->name);
}

int gdn_backend_poll_wait(struct gdn_backend *b, const char *job_id, const struct gdn_wait_spec *w,
			  long default_poll_ms, gdn_poll_fn poll_fn, void *ctx,
			  struct gdn_job_status *st, struct gdn_err *err)
{
	struct gdn_follow follow = GDN_FOLLOW_INIT, *f = NULL;
	struct sbuf dur = SBUF_INIT;
	char last[sizeof(st->native)] = "";
	long poll_ms = w->poll_ms > 0 ? w->poll_ms : default_poll_ms;
	long progress_ms = w->progress_ms > 0 ? w->progress_ms : 60000;
	int64_t start = gdn_now_ms(), last_report = 0;
	int failures = 0, ret = 0;
	bool reported = false;

	if (poll_ms <= 0)
		poll_ms = 5000;
	if (w->show_logs) {
		follow.on_line = w->on_line;
		follow.payload = w->payload;
		f = &follow;
	}
	for (;;) {
		struct gdn_err perr = GDN_ERR_INIT;
		int64_t now;
		long pause_ms;

		ret = poll_fn(b, ctx, job_id, f, st, &perr);
		if (b->dry_run) {
			if (ret)
				*err = perr;
			goto out;
		}
		if (gdn_proc_interrupted()) {
			ret = interrupted(b, job_id, err);
			goto out;
		}
		if (ret == GDN_EBACKEND && ++failures <= 3) {
			gdn_backend_event(b, GDN_EV_INFO, "polling job %s failed (%s); retrying",
					  job_id, perr.msg);
			ret = 0;
		} else if (ret) {
			*err = perr;
			goto out;
		} else {
			failures = 0;
			if (st->final)
				goto out;
		}
		b->quiet_polls = true;
		now = gdn_now_ms();
		if (w->timeout_ms > 0 && now - start >= w->timeout_ms) {
			sbuf_reset(&dur);
			gdn_format_duration(w->timeout_ms, &dur);
			ret = gdn_err_set(
			    err, GDN_ETIMEOUT, "timed out after %s waiting for job %s on %s (%s)",
			    dur.buf, job_id, b->name, st->native[0] ? st->native : "UNKNOWN");
			goto out;
		}
		if (!failures &&
		    (!reported || strcmp(last, st->native) || now - last_report >= progress_ms)) {
			sbuf_reset(&dur);
			gdn_format_elapsed(now - start, &dur);
			gdn_backend_event(b, GDN_EV_WAITING, "waiting for job %s on %s (%s) for %s",
					  job_id, b->name, st->native[0] ? st->native : "UNKNOWN",
					  dur.buf);
			memcpy(last, st->native, sizeof(last));
			last_report = now;
			reported = true;
		}
		pause_ms = poll_ms;
		if (w->timeout_ms > 0 && start + w->timeout_ms - now < pause_ms)
			pause_ms = (long)(start + w->timeout_ms - now);
		if (gdn_sleep_interruptible(pause_ms)) {
			ret = interrupted(b, job_id, err);
			goto out;
		}
	}
out:
	b->quiet_polls = false;
	if (f)
		gdn_follow_flush(f);
	gdn_follow_release(&follow);
	sbuf_release(&dur);
	return ret;
}

void gdn_backend_stop_after(struct gdn_backend *b, const char *job_id, const char *why,
			    const char *verb)
{
	struct gdn_err err = GDN_ERR_INIT;
	char last = verb[strlen(verb) - 1]; /* stop: stopping, cancel: cancelling */

	gdn_backend_event(b, GDN_EV_INFO, "%s%cing job %s on %s (%s)", verb, last, job_id, b->name,
			  why);
	if (b->ops->stop(b, job_id, &err))
		gdn_backend_event(b, GDN_EV_INFO, "could not %s job %s: %s", verb, job_id, err.msg);
}
