/*
 * The integrity gate's configuration (integrity.h): integrity.* and
 * project.holdout_* keys, read once at the start of `gdnctl loop`.
 */
#include "gdnctl/compat.h"
#include <limits.h>
#include <math.h>
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/sha256.h"
#include "gdnctl/xalloc.h"

#define HOLDOUT_TIMEOUT_MS (10 * 60 * 1000)

void gdn_integrity_config_init(struct gdn_integrity_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int r = 0; r < GDN_RULE_NR; r++)
		c->policy[r] = GDN_INTEGRITY_REVERT;
	c->policy[GDN_RULE_DIFF] = GDN_INTEGRITY_HOLD;
	c->rulers_share = 0.5;
	c->confidence = 0.95;
	c->work_max_drop_pct = 50;
	strvec_init(&c->work_allow);
	c->holdout_timeout_ms = HOLDOUT_TIMEOUT_MS;
}

void gdn_integrity_config_release(struct gdn_integrity_config *c)
{
	strvec_clear(&c->work_allow);
	free(c->device);
	gdn_peaks_release(&c->peaks);
	gdn_diffpats_release(&c->pats);
	free(c->holdout_command);
	free(c->holdout_file);
	memset(c, 0, sizeof(*c));
}

static bool nonempty(const char *s)
{
	return s && *s;
}

/* Whether `path` (resolved) lies inside `dir` (resolved), or is it. */
static bool inside(const char *path, const char *dir)
{
	char rd[PATH_MAX];
	size_t n;

	if (!dir || !realpath(dir, rd))
		return false;
	n = strlen(rd);
	return !strncmp(path, rd, n) && (path[n] == '/' || !path[n] || (n == 1 && rd[0] == '/'));
}

int gdn_integrity_hash_file(const char *path, char hex[65], struct gdn_err *err)
{
	struct gdn_sha256 h;
	unsigned char d[GDN_SHA256_LEN];
	uint64_t n = 0;
	int ret;

	gdn_sha256_init(&h);
	ret = gdn_sha256_file(path, UINT64_MAX, &h, &n, err);
	if (ret)
		return ret;
	gdn_sha256_final(&h, d);
	gdn_sha256_hex(d, hex);
	return 0;
}

static int configure_holdout(struct gdn_integrity_config *c, const struct gdn_config *cfg,
			     const char *repo_root, const char *agent_dir, struct gdn_err *err)
{
	const char *cmd = gdn_config_str(cfg, "project.holdout_command");
	const char *file = gdn_config_str(cfg, "project.holdout_file");
	const char *want = gdn_config_str(cfg, "project.holdout_sha256");
	char path[PATH_MAX];
	char *rel = NULL;
	int ret;

	if (!nonempty(cmd))
		return nonempty(file) ? gdn_err_set(err, GDN_ECONFIG,
						    "project.holdout_file is set but "
						    "project.holdout_command is not")
				      : 0;
	c->holdout_command = xstrdup(cmd);
	if (!nonempty(file))
		return gdn_err_set(err, GDN_ECONFIG,
				   "project.holdout_command needs project.holdout_file (the sealed "
				   "check, outside the agent's tree, hashed before each use)");
	/* relative to the repository, as the other project.* paths */
	if (file[0] != '/' && repo_root)
		rel = xstrfmt("%s/%s", repo_root, file);
	if (!realpath(rel ? rel : file, path)) {
		free(rel);
		return gdn_err_errno(err, GDN_ECONFIG, "project.holdout_file '%s'", file);
	}
	free(rel);
	if (inside(path, repo_root) || inside(path, agent_dir))
		return gdn_err_set(err, GDN_ECONFIG,
				   "project.holdout_file '%s' is inside the repository the agent "
				   "works in: keep it where the agent cannot reach it",
				   file);
	c->holdout_file = xstrdup(path);
	ret = gdn_integrity_hash_file(path, c->holdout_sha256, err);
	if (ret) {
		gdn_err_prefix(err, "project.holdout_file");
		return ret;
	}
	if (nonempty(want) && strcasecmp(want, c->holdout_sha256))
		return gdn_err_set(err, GDN_ECONFIG,
				   "project.holdout_file '%s' has sha256 %s, not the configured "
				   "project.holdout_sha256 %s",
				   file, c->holdout_sha256, want);
	return 0;
}

static int configure_policies(struct gdn_integrity_config *c, const struct gdn_config *cfg,
			      struct gdn_err *err)
{
	for (int r = 0; r < GDN_RULE_NR; r++) {
		char *key =
		    xstrfmt("integrity.policy.%s", gdn_enum_name(gdn_integrity_rule_enum, r));
		const char *v = gdn_config_str(cfg, key);
		int p;

		if (nonempty(v) && gdn_enum_parse(gdn_integrity_policy_enum, v, &p)) {
			int ret = gdn_err_set(err, GDN_ECONFIG, "%s: unknown policy '%s'", key, v);

			free(key);
			return ret;
		}
		if (nonempty(v))
			c->policy[r] = (enum gdn_integrity_policy)p;
		free(key);
	}
	return 0;
}

static int configure_numbers(struct gdn_integrity_config *c, const struct gdn_config *cfg,
			     struct gdn_err *err)
{
	c->rulers_share = gdn_config_float(cfg, "integrity.rulers_share", c->rulers_share);
	c->confidence = gdn_config_float(cfg, "integrity.confidence", c->confidence);
	c->work_max_drop_pct =
	    gdn_config_float(cfg, "integrity.work_max_drop_pct", c->work_max_drop_pct);
	if (!(c->rulers_share > 0 && c->rulers_share <= 1))
		return gdn_err_set(err, GDN_ECONFIG, "integrity.rulers_share must be in (0, 1]");
	if (!(c->confidence > 0 && c->confidence < 1))
		return gdn_err_set(err, GDN_ECONFIG, "integrity.confidence must be in (0, 1)");
	if (!(c->work_max_drop_pct >= 0 && c->work_max_drop_pct < 100))
		return gdn_err_set(err, GDN_ECONFIG,
				   "integrity.work_max_drop_pct must be in [0, 100)");
	return 0;
}

int gdn_integrity_configure(struct gdn_integrity_config *c, const struct gdn_config *cfg,
			    const char *repo_root, const char *agent_dir, struct gdn_err *err)
{
	static const char *const figures[] = {"flops", "bytes", "ops", "custom_calls"};
	const struct strvec *l;
	const char *s = gdn_config_str(cfg, "integrity.mode");
	int ret;

	c->on = nonempty(s) && !strcmp(s, "on");
	if (!c->on)
		return 0;
	ret = configure_policies(c, cfg, err);
	if (!ret)
		ret = configure_numbers(c, cfg, err);
	for (size_t i = 0; !ret && (l = gdn_config_list(cfg, "integrity.work_allow")) && i < l->nr;
	     i++) {
		bool known = false;

		for (size_t k = 0; k < ARRAY_SIZE(figures); k++)
			known = known || !strcmp(l->v[i], figures[k]);
		if (!known)
			ret =
			    gdn_err_set(err, GDN_ECONFIG,
					"integrity.work_allow: unknown figure '%s' (flops, bytes, "
					"ops, custom_calls)",
					l->v[i]);
		else
			strvec_push(&c->work_allow, l->v[i]);
	}
	for (size_t i = 0; !ret && (l = gdn_config_list(cfg, "integrity.peaks")) && i < l->nr; i++)
		ret = gdn_peaks_parse(&c->peaks, l->v[i], err);
	s = gdn_config_str(cfg, "integrity.device");
	if (!ret && nonempty(s)) {
		c->device = xstrdup(s);
		if (!gdn_peaks_find(&c->peaks, s))
			ret =
			    gdn_err_set(err, GDN_ECONFIG,
					"integrity.device: no peaks for '%s' (a built-in kind, or "
					"an integrity.peaks row)",
					s);
	}
	if (!ret && gdn_config_bool(cfg, "integrity.diff_defaults", true))
		gdn_diffpats_add_defaults(&c->pats);
	for (size_t i = 0;
	     !ret && (l = gdn_config_list(cfg, "integrity.diff_patterns")) && i < l->nr; i++)
		ret = gdn_diffpat_parse(&c->pats, l->v[i], err);
	if (!ret)
		ret = configure_holdout(c, cfg, repo_root, agent_dir, err);
	return ret;
}
