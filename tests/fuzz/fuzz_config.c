/*
 * Fuzz the YAML configuration loader: every input is loaded as a layer
 * with the global schema, and again with a schema that has map sections,
 * then every value is formatted and the configuration released. Inputs
 * must never crash, leak, or expand (aliases are refused).
 */
#include "gdnctl/compat.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct gdn_enum kinds[] = {{"ssh", 0, NULL}, {"ray", 1, NULL}, GDN_ENUM_END};

static const struct gdn_cfg_key map_schema[] = {
    {"name", GDN_CFG_STRING, "anon", NULL, NULL, "", false},
    {"count", GDN_CFG_INT, "3", NULL, NULL, "", false},
    {"ratio", GDN_CFG_FLOAT, NULL, NULL, NULL, "", false},
    {"on", GDN_CFG_BOOL, NULL, NULL, NULL, "", false},
    {"wait", GDN_CFG_DURATION, NULL, NULL, NULL, "", false},
    {"fields", GDN_CFG_LIST, NULL, NULL, NULL, "", false},
    {"backends", GDN_CFG_MAP, NULL, NULL, NULL, "", false},
    {"backends.*.type", GDN_CFG_STRING, "ssh", NULL, kinds, "", false},
    {"backends.*.host", GDN_CFG_STRING, NULL, NULL, NULL, "", true},
    {"backends.*.env", GDN_CFG_MAP, NULL, NULL, NULL, "", false},
    {"backends.*.env.*", GDN_CFG_STRING, NULL, NULL, NULL, "", false},
};

static void exercise(struct gdn_config *cfg, const uint8_t *data, size_t size)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;
	struct strvec names = STRVEC_INIT;

	if (!gdn_config_load_buffer(cfg, "fuzz.yaml", (const char *)data, size, GDN_SRC_REPO_FILE,
				    &err)) {
		for (size_t i = 0; i < cfg->nr; i++)
			gdn_config_value_format(&cfg->v[i], &out);
		gdn_config_map_names(cfg, "backends", &names);
		(void)gdn_config_int(cfg, "count", 0);
		(void)gdn_config_list(cfg, "fields");
	} else if (!err.msg[0] || strchr(err.msg, '\n')) {
		BUG("configuration errors are one non-empty line: '%s'", err.msg);
	}
	gdn_config_release(cfg);
	sbuf_release(&out);
	strvec_clear(&names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gdn_config cfg = GDN_CONFIG_INIT;

	exercise(&cfg, data, size);
	gdn_config_init(&cfg, map_schema, ARRAY_SIZE(map_schema));
	exercise(&cfg, data, size);
	return 0;
}
