/*
 * Configuration: a schema of known keys (src/config/schema.c, documented
 * in docs/configuration.md) and the effective values, each with where it
 * came from. Precedence, highest first:
 *   command line (-c KEY=VALUE)  >  environment (GDNCTL_*)  >
 *   gdnctl.yaml in the repository root  >  ~/.config/gdnctl/config.yaml  >
 *   built-in defaults (the Marin conventions).
 * Unknown keys and values of the wrong type are errors that name
 * file:line:col.
 */
#ifndef GDNCTL_CONFIG_H
#define GDNCTL_CONFIG_H

#include "gdnctl/compat.h"
#include "gdnctl/strvec.h"

struct gdn_err;
struct sbuf;

enum gdn_cfg_type {
	GDN_CFG_STRING,
	GDN_CFG_INT,
	GDN_CFG_FLOAT,
	GDN_CFG_BOOL,
	GDN_CFG_DURATION, /* stored as milliseconds */
	GDN_CFG_LIST,     /* sequence of strings */
	GDN_CFG_MAP,      /* a map of named sections: backends.<name>.<key> */
};

/* A schema entry. Keys are dotted paths; "*" stands for a user-chosen name under a MAP. */
struct gdn_cfg_key {
	const char *key;      /* "lint.require_fields", "backends.*.host" */
	enum gdn_cfg_type type;
	const char *defval;   /* built-in default as text (lists: comma separated), or NULL */
	const char *env;      /* environment variable, or NULL */
	const char *const *choices; /* allowed string values, or NULL */
	const char *help;     /* one line for docs and `config show --help-keys` */
	bool secret;          /* masked in every output */
};

extern const struct gdn_cfg_key gdn_cfg_schema[];
extern const size_t gdn_cfg_schema_nr;

enum gdn_cfg_source {
	GDN_SRC_DEFAULT = 0,
	GDN_SRC_USER_FILE,
	GDN_SRC_REPO_FILE,
	GDN_SRC_ENV,
	GDN_SRC_CMDLINE,
};

struct gdn_cfg_value {
	char *key;           /* concrete key ("backends.box.host") */
	const struct gdn_cfg_key *schema;
	enum gdn_cfg_source source;
	char *origin;        /* "path:line:col", "GDNCTL_LOG_FILE", "-c", "default" */
	char *str;           /* scalar text (also for int/float/bool/duration) */
	struct strvec list;  /* GDN_CFG_LIST */
	long long i;         /* parsed INT, BOOL (0/1), DURATION (ms) */
	double f;            /* parsed FLOAT */
};

struct gdn_config {
	struct gdn_cfg_value *v;
	size_t nr, alloc;
	char *repo_file; /* path looked at (may not exist), owned */
	char *user_file;
};
#define GDN_CONFIG_INIT { NULL, 0, 0, NULL, NULL }

struct gdn_config_load_opts {
	const char *repo_root;             /* NULL: no repository file */
	const char *user_file;             /* NULL: $XDG_CONFIG_HOME or ~/.config/gdnctl/config.yaml */
	const char *const *cmdline;        /* "KEY=VALUE" overrides, NULL-terminated, or NULL */
	const char *const *environ_;       /* NULL: the process environment */
};

/* Load every layer. Returns 0 or GDN_ECONFIG with "path:line:col: message" in err. */
int gdn_config_load(struct gdn_config *cfg, const struct gdn_config_load_opts *o,
		    struct gdn_err *err);
/* Load one YAML buffer as a layer (for tests and fuzzing). `name` is used in messages. */
int gdn_config_load_buffer(struct gdn_config *cfg, const char *name, const char *buf, size_t len,
			   enum gdn_cfg_source source, struct gdn_err *err);
void gdn_config_release(struct gdn_config *cfg);

/* Lookups return the effective value, or NULL/the fallback when unset. Results are borrowed. */
const struct gdn_cfg_value *gdn_config_get(const struct gdn_config *cfg, const char *key);
const char *gdn_config_str(const struct gdn_config *cfg, const char *key);
long long gdn_config_int(const struct gdn_config *cfg, const char *key, long long fallback);
double gdn_config_float(const struct gdn_config *cfg, const char *key, double fallback);
bool gdn_config_bool(const struct gdn_config *cfg, const char *key, bool fallback);
const struct strvec *gdn_config_list(const struct gdn_config *cfg, const char *key);
/* Names defined under a MAP key ("backends"), in file order, appended to out. */
void gdn_config_map_names(const struct gdn_config *cfg, const char *map_key, struct strvec *out);

const char *gdn_cfg_source_name(enum gdn_cfg_source s);
/* The value as text for display, with secrets replaced by "***". Appended to out. */
void gdn_config_value_format(const struct gdn_cfg_value *v, struct sbuf *out);

#endif
