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

static const char *const lint_scopes[] = {"last-entry", "all", NULL};

const struct gdn_cfg_key gdn_cfg_schema[] = {
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
    {"secrets", GDN_CFG_LIST, NULL, "GDNCTL_SECRETS", NULL,
     "extra environment variable names whose values are masked in output", false},
};

const size_t gdn_cfg_schema_nr = ARRAY_SIZE(gdn_cfg_schema);
