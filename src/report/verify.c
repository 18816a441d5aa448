/*
 * The report's view of `gdnctl loop verify` (report.h): the verified and
 * claimed speed-ups of <log dir>/verify.json on their iterations.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/err.h"
#include "gdnctl/report.h"
#include "gdnctl/verify.h"

static double num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

int gdn_report_add_verify(struct gdn_report *r, const char *buf, size_t len, const char *name,
			  struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(buf, len, 0, &jerr), *row;
	const char *schema = json_string_value(json_object_get(doc, "schema"));
	size_t i;

	if (!doc || !schema || strcmp(schema, GDN_VERIFY_SCHEMA) ||
	    !json_is_array(json_object_get(doc, "rows"))) {
		json_decref(doc);
		return gdn_err_set(err, GDN_EPARSE, "'%s' is not a loop verify table (%s)", name,
				   GDN_VERIFY_SCHEMA);
	}
	json_array_foreach(json_object_get(doc, "rows"), i, row)
	{
		long it = (long)json_integer_value(json_object_get(row, "iteration"));

		for (size_t k = 0; k < r->nr; k++) {
			struct gdn_report_iter *x = &r->v[k];

			if (x->iteration != it)
				continue;
			x->has_verified = true;
			x->claimed_pct = num(row, "claimed_pct");
			x->verified_pct = num(row, "verified_pct");
			x->verified_lo_pct = num(row, "ci_low_pct");
			x->verified_hi_pct = num(row, "ci_high_pct");
		}
	}
	json_decref(doc);
	return 0;
}
