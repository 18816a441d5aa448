/*
 * Fuzz the options-as-data parser: the input is split at NUL bytes into
 * argv, parsed against a table with every option type and names that are
 * prefixes of others (abbreviations, --no- forms, ambiguity, did you
 * mean), and the value parsers and the suggester are fed the raw input.
 */
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/suggest.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const choices[] = {"a", "bb", NULL};
static const struct gdn_enum kinds[] = {{"x", 1, "x"}, {"yy", 2, NULL}, GDN_ENUM_END};
static const struct opt_usage usage = {"fuzz [options]", "fuzz", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = xmalloc(size + 1); /* NUL-separated words, all kept */
	struct strvec args = STRVEC_INIT, list = STRVEC_INIT, kv = STRVEC_INIT, rest = STRVEC_INIT;
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int flag = 0, kind = 0, sync = 1, no_wait = 0, field = 0, fields = 0;
	long n = 0, dur = 0;
	double f = 0, secs = 0, mins = 0;
	const char *s = NULL, *c = NULL;
	size_t off = 0, klen;
	struct opt opts[] = {
	    OPT_BOOL_('f', "flag", &flag, "flag"),
	    OPT_INT_('n', "num", &n, "N", "num", NULL, -5, 5),
	    OPT_FLOAT_(0, "ratio", &f, "X", "ratio", NULL),
	    OPT_DURATION_(0, "timeout", &dur, "timeout", NULL),
	    OPT_STRING_('o', "out", &s, "PATH", "out", NULL),
	    OPT_CHOICE_(0, "scope", &c, choices, "scope", NULL),
	    OPT_ENUM_('k', "kind", &kind, kinds, "kind", NULL),
	    OPT_LIST_(0, "field", &list, "NAME", "field"),
	    OPT_KV_('e', "env", &kv, "env"),
	    OPT_NEGBOOL_(0, "sync", &sync, "sync", "on"),
	    OPT_BOOL_(0, "no-wait", &no_wait, "no wait"),
	    OPT_BOOL_(0, "field-one", &field, "one field"),
	    OPT_BOOL_F(0, "field-ones", &fields, "fields", OPT_HIDDEN),
	    OPT_SECONDS_(0, "sleep-seconds", &secs, "S", "sleep", NULL),
	    OPT_MINUTES_(0, "max-minutes", &mins, "M", "minutes", NULL),
	    OPT_END_(),
	};

	memcpy(copy, data, size);
	copy[size] = '\0';
	strvec_push(&args, "fuzz");
	while (off < size) {
		size_t len = strnlen((const char *)data + off, size - off);

		strvec_push(&args, copy + off);
		off += len + 1;
	}
	opt_parse(opts, &usage, (int)args.nr, args.v, 0, &rest, &help, &err);
	opt_parse(opts, &usage, (int)args.nr, args.v, OPT_PARSE_NO_POSITIONAL, &rest, &help, &err);
	opt_parse(opts, &usage, (int)args.nr, args.v, OPT_PARSE_STOP_AT_NON_OPTION, &rest, &help,
		  &err);
	opt_parse_long(copy, &n);
	opt_parse_double(copy, &f);
	opt_parse_duration_ms(copy, &dur);
	opt_parse_seconds(copy, 1, &f);
	opt_parse_seconds(copy, 60, &f);
	if (args.nr > 2) { /* the first two words against each other, as a typo of a name */
		struct gdn_suggest sg = GDN_SUGGEST_INIT(args.v[1]);
		struct sbuf hint = SBUF_INIT;

		gdn_edit_distance(args.v[1], args.v[2]);
		gdn_suggest_add(&sg, args.v[2]);
		gdn_suggest_add(&sg, copy);
		gdn_suggest_format(&sg, "--", &hint);
		gdn_suggest_release(&sg);
		sbuf_release(&hint);
	}
	opt_parse_kv(copy, &klen);
	gdn_enum_parse(kinds, copy, &kind);

	strvec_clear(&args);
	strvec_clear(&list);
	strvec_clear(&kv);
	strvec_clear(&rest);
	sbuf_release(&help);
	free(copy);
	return 0;
}
