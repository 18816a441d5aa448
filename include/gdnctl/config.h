/*
 * Configuration: a schema of known keys (src/config/schema.c, documented
 * in docs/configuration.md) and the effective values, each with where it
 * came from. Precedence, highest first:
 *   command line (-c KEY=VALUE)  >  environment (GDNCTL_*)  >
 *   gdnctl.yaml in the repository root  >  ~/.config/gdnctl/config.yaml  >
 *   built-in defaults (the Marin conventions).
 * Unknown keys and values of the wrong type are errors that name
 * file:line:col.
 *
 * Keys are dotted paths. In YAML, nested mappings and dotted keys are the
 * same thing: `lint: {scope: all}` and `lint.scope: all` both set
 * "lint.scope". A GDN_CFG_MAP schema entry ("backends") holds sections
 * whose names the user chooses; their keys are described by entries with
 * a "*" in the name's place ("backends.*.host").
 *
 * The schema is a property of a struct gdn_config: GDN_CONFIG_INIT uses
 * the global gdn_cfg_schema, gdn_config_init() any other (tests).
 */
#ifndef GDNCTL_CONFIG_H
#define GDNCTL_CONFIG_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/strvec.h"

struct gdn_err;
struct sbuf;

enum gdn_cfg_type {
	GDN_CFG_STRING,	  /* with `choices`: one of them ("choice" in the docs) */
	GDN_CFG_INT,	  /* decimal, fits a long */
	GDN_CFG_FLOAT,	  /* finite */
	GDN_CFG_BOOL,	  /* true/false, yes/no, on/off, 1/0 (any case) */
	GDN_CFG_DURATION, /* "90s", "15m", "2h", "1h30m", "1500ms"; a bare integer is seconds;
			     stored as ms */
	GDN_CFG_LIST,	  /* YAML sequence of scalars; a scalar (env, -c) is split at commas */
	GDN_CFG_MAP,	  /* a map of named sections: backends.<name>.<key> */
};

/* A schema entry. Keys are dotted paths; "*" stands for a user-chosen name under a MAP. */
struct gdn_cfg_key {
	const char *key; /* "lint.require_fields", "backends.*.host" */
	enum gdn_cfg_type type;
	const char *defval; /* built-in default as text (lists: comma separated), or NULL */
	const char *env;    /* environment variable, or NULL (never for "*" keys) */
	const struct gdn_enum *choices; /* allowed string values: the names of the rows, or NULL */
	const char *help;		/* one line for docs and `gdnctl config keys` */
	bool secret;			/* masked in every output */
};

extern const struct gdn_cfg_key gdn_cfg_schema[];
extern const size_t gdn_cfg_schema_nr;

/* Limits for untrusted input. */
#define GDN_CFG_MAX_FILE_SIZE (1024 * 1024) /* bytes of one YAML file */
#define GDN_CFG_MAX_DEPTH     32	    /* nested YAML collections */
#define GDN_CFG_MAX_VALUES    4096	    /* values and sections in one configuration */

enum gdn_cfg_source {
	GDN_SRC_DEFAULT = 0,
	GDN_SRC_USER_FILE,
	GDN_SRC_REPO_FILE,
	GDN_SRC_ENV,
	GDN_SRC_CMDLINE,
};

struct gdn_cfg_value {
	char *key; /* concrete key ("backends.box.host") */
	const struct gdn_cfg_key *schema;
	enum gdn_cfg_source source;
	char *origin;	    /* "path:line:col", "GDNCTL_LOG_FILE", "-c", "default" */
	char *str;	    /* text: as written; BOOL "true"/"false"; LIST items joined with "," */
	struct strvec list; /* GDN_CFG_LIST */
	long long i;	    /* parsed INT, BOOL (0/1), DURATION (ms) */
	double f;	    /* parsed FLOAT (also set for INT) */
};

struct gdn_config {
	const struct gdn_cfg_key *schema; /* NULL: gdn_cfg_schema */
	size_t schema_nr;
	struct gdn_cfg_value *v; /* in the order keys were first set */
	size_t nr, alloc;
	struct strvec
	    sections;	 /* concrete names of MAP sections ("backends.box"), first-seen order */
	char *repo_file; /* <repo root>/GDN_CONFIG_REPO_FILE (may not exist), owned, or NULL */
	char *user_file;
};
/* The project's file, in the repository root. */
#define GDN_CONFIG_REPO_FILE "gdnctl.yaml"
#define GDN_CONFIG_INIT                                      \
	{                                                    \
		NULL, 0, NULL, 0, 0, STRVEC_INIT, NULL, NULL \
	}

/* Initialise an empty configuration over `schema` (NULL: the global one). */
void gdn_config_init(struct gdn_config *cfg, const struct gdn_cfg_key *schema, size_t schema_nr);
/* Free every value; the schema is kept, so cfg is ready for another load. */
void gdn_config_release(struct gdn_config *cfg);

struct gdn_config_load_opts {
	const char *repo_root;	     /* NULL: no repository file */
	const char *user_file;	     /* NULL: $XDG_CONFIG_HOME or ~/.config/gdnctl/config.yaml */
	const char *const *cmdline;  /* "KEY=VALUE" overrides, NULL-terminated, or NULL */
	const char *const *environ_; /* "NAME=VALUE" list; NULL: the process environment */
};

/*
 * Load every layer into an empty cfg: defaults, user file, repository
 * file, environment, command line; then fill defaults of "*" keys in
 * every section, and register the names listed in `secrets` (and the
 * values of secret keys) with the secret masker (include/gdnctl/proc.h).
 * Absent files are fine. Returns 0 or GDN_ECONFIG with "ORIGIN: message"
 * in err (ORIGIN is "path:line:col", "path", an environment variable
 * name or "-c"); on error cfg holds a partial result to release.
 */
int gdn_config_load(struct gdn_config *cfg, const struct gdn_config_load_opts *o,
		    struct gdn_err *err);
/*
 * Load one YAML buffer as a layer over what cfg holds (no defaults: for
 * tests and fuzzing). `name` is the path used in messages. Same errors.
 */
int gdn_config_load_buffer(struct gdn_config *cfg, const char *name, const char *buf, size_t len,
			   enum gdn_cfg_source source, struct gdn_err *err);
/*
 * Load one YAML buffer as layer `source` after the later layers: a key it
 * sets takes effect where cfg's value comes from a lower layer (a default,
 * the user file), never over the environment or the command line. For a
 * repository file read from a commit (`loop --resume`). Same errors.
 */
int gdn_config_load_under(struct gdn_config *cfg, const char *name, const char *buf, size_t len,
			  enum gdn_cfg_source source, struct gdn_err *err);
/* Set one key from text, as -c does ("origin" is copied). Same errors. */
int gdn_config_set(struct gdn_config *cfg, const char *key, const char *text,
		   enum gdn_cfg_source source, const char *origin, struct gdn_err *err);

/* Lookups return the effective value, or NULL/the fallback when unset. Results are borrowed. */
const struct gdn_cfg_value *gdn_config_get(const struct gdn_config *cfg, const char *key);
const char *gdn_config_str(const struct gdn_config *cfg, const char *key);
/* INT, DURATION (ms) and BOOL (0/1) values; fallback for other types. */
long long gdn_config_int(const struct gdn_config *cfg, const char *key, long long fallback);
/* FLOAT and INT values. */
double gdn_config_float(const struct gdn_config *cfg, const char *key, double fallback);
bool gdn_config_bool(const struct gdn_config *cfg, const char *key, bool fallback);
/* Never NULL: an empty list when the key is unset or not a list. */
const struct strvec *gdn_config_list(const struct gdn_config *cfg, const char *key);
/* Names defined under a MAP key ("backends"), in first-seen order, appended to out. */
void gdn_config_map_names(const struct gdn_config *cfg, const char *map_key, struct strvec *out);
/*
 * A path-valued key resolved against `base` (usually the repository root;
 * NULL: as is): absolute values are kept, "~/" is $HOME. Returns a new
 * string (the caller frees it), or NULL when the key is unset or empty.
 */
char *gdn_config_path(const struct gdn_config *cfg, const char *key, const char *base);

/* The schema in use and its size (never NULL). */
const struct gdn_cfg_key *gdn_config_schema(const struct gdn_config *cfg, size_t *nr);
/* The schema entry for a concrete leaf key ("backends.box.host"), or NULL. */
const struct gdn_cfg_key *gdn_config_schema_find(const struct gdn_config *cfg, const char *key);
/* Append "; did you mean 'KEY'?" to out when a key of the schema is close to unknown `key`. */
void gdn_config_suggest_key(const struct gdn_config *cfg, const char *key, struct sbuf *out);
/* Check a schema: every default parses, every "*" sits under a MAP. For tests. */
int gdn_cfg_schema_check(const struct gdn_cfg_key *schema, size_t nr, struct gdn_err *err);

/* "default", "user", "repo", "env", "command-line". */
const char *gdn_cfg_source_name(enum gdn_cfg_source s);
/* "string", "choice", "int", "float", "bool", "duration", "list", "map". */
const char *gdn_cfg_type_name(const struct gdn_cfg_key *k);
/* The value as text for display, with secrets replaced by "***". Appended to out. */
void gdn_config_value_format(const struct gdn_cfg_value *v, struct sbuf *out);

#endif
