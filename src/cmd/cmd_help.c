/*
 * `gdnctl help`: the global help, a command's help, and documents
 * generated from the command table and each command's option table
 * (JSON with --json, roff man pages with --man). Each command's table is
 * read in describe mode (include/gdnctl/opt.h): the command is called and
 * stops in gdn_cmd_parse_opts before it parses argv or does any work.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/help.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/optdoc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/suggest.h"

#define COMMANDS_JSON_SCHEMA "gdnctl.commands.v1"
#define COMMAND_JSON_SCHEMA  "gdnctl.command.v1"

/* The global options main() parses: for the help text and the man page. */
static const struct {
	const char *names, *arg, *help;
} global_opts[] = {
    {"-C", "DIR", "run as if started in DIR"},
    {"-c", "KEY=VALUE", "set a configuration value (highest precedence)"},
    {"-q, --quiet", NULL, "no echoed commands or status lines (stderr); data and errors stay"},
    {"--version", NULL, "print the version"},
    {"-h, --help", NULL, "show this help"},
};

/*
 * The exit codes of every command (include/gdnctl/exitcode.h), for --help
 * and the man page; docs/gdnctl.md has the same table (tests/e2e/t0007).
 */
static const struct {
	const char *code, *word, *meaning;
} exit_codes[] = {
    {"0", "ok", "success"},
    {"1", "failed",
     "the command ran and the answer is \"failed\" (tests, lint, a job, a loop iteration), "
     "or unreadable input"},
    {"2", "usage",
     "usage error: a bad command line, or a state it cannot run in (loop: a dirty tree)"},
    {"3", "configuration", "configuration error, or a setting the command needs is not set"},
    {"4", "backend or agent", "backend or agent error: a program gdnctl runs failed or is missing"},
    {"5", "network", "network failure after retries"},
    {"124", "timed out", "a deadline passed"},
    {"128+N", "killed by signal N", "killed by (or stopped on) signal N"},
};

void gdn_print_global_usage(FILE *f)
{
	fputs("usage: gdnctl [-C DIR] [-c KEY=VALUE]... [-q] COMMAND [ARGS]\n"
	      "       gdnctl --version | --help | help COMMAND [SUBCOMMAND]\n",
	      f);
}

static void list_commands(FILE *f, bool aliases)
{
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++) {
		if ((c->flags & CMD_HIDDEN) || !!(c->flags & CMD_ALIAS) != aliases)
			continue;
		if (aliases)
			fprintf(f, "   %-20s same as '%s' (original gdnctl.py name)\n", c->name,
				c->alias_of);
		else
			fprintf(f, "   %-20s %s\n", c->name, c->summary);
	}
}

void gdn_print_global_help(FILE *f)
{
	bool any_alias = false;

	gdn_print_global_usage(f);
	fputs("\nHill-climb the speed of ML kernels: run tests and profiles on clusters,\n"
	      "read profiler traces, and drive an unattended optimisation loop.\n"
	      "\nGlobal options:\n",
	      f);
	for (size_t i = 0; i < ARRAY_SIZE(global_opts); i++) {
		char left[64];

		snprintf(left, sizeof(left), "%s%s%s", global_opts[i].names,
			 global_opts[i].arg ? " " : "",
			 global_opts[i].arg ? global_opts[i].arg : "");
		fprintf(f, "   %-20s %s\n", left, global_opts[i].help);
	}
	fputs("\nCommands:\n", f);
	list_commands(f, false);
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++)
		any_alias |= !!(c->flags & CMD_ALIAS);
	if (any_alias) {
		fputs("\nAliases:\n", f);
		list_commands(f, true);
	}
	fputs("\nSee 'gdnctl help COMMAND' for the options of one command.\nExit status:", f);
	for (size_t i = 0; i < ARRAY_SIZE(exit_codes); i++)
		fprintf(f, "%s%s %s",
			i == 0	 ? " "
			: i == 5 ? ",\n"
				 : ", ",
			exit_codes[i].code, exit_codes[i].word);
	fputs(".\n", f);
	fputs("The original tool's names (Aliases) keep its codes where they differ; see\n"
	      "docs/compatibility.md.\n",
	      f);
}

void gdn_error_unknown_command(const char *name)
{
	struct gdn_suggest sg = GDN_SUGGEST_INIT(name);
	struct sbuf hint = SBUF_INIT;

	for (const struct gdn_cmd *c = gdn_commands; c->name; c++)
		if (!(c->flags & CMD_HIDDEN))
			gdn_suggest_add(&sg, c->name);
	gdn_suggest_format(&sg, NULL, &hint);
	gdn_error("'%s' is not a gdnctl command; see 'gdnctl --help'%s", name, hint.buf);
	gdn_suggest_release(&sg);
	sbuf_release(&hint);
}

/* What describe mode captured of one option table. */
struct capture {
	const char *name;   /* the command, for its subcommands */
	json_t *doc;	    /* opt_doc_json */
	struct sbuf roff;   /* opt_doc_roff_options */
	struct strvec opts; /* "--NAME" of every visible option */
	struct strvec subs; /* subcommands its usage names */
};

/*
 * New reference: an option's value before parsing, read through its value
 * pointer (the command has initialised it and stopped in describe mode), for
 * the architecture test to compare with the documented default. NULL for the
 * types without one value (list, key=value).
 */
static json_t *initial_json(const struct opt *o)
{
	switch (o->type) {
	case OPT_BOOL:
		return json_boolean(*(const int *)o->value);
	case OPT_INT:
	case OPT_DURATION:
		return json_integer(*(const long *)o->value);
	case OPT_FLOAT:
	case OPT_SECONDS:
		return json_real(*(const double *)o->value);
	case OPT_STRING:
	case OPT_CHOICE: {
		const char *s = *(const char *const *)o->value;

		return s ? gdn_json_string_lossy(s) : json_null();
	}
	case OPT_ENUM:
		return gdn_json_string_lossy(gdn_enum_name(o->enums, *(const int *)o->value));
	default:
		return NULL;
	}
}

/* Add "initial" to each option of an opt_doc_json document (same order, groups skipped). */
static void add_initial_values(json_t *doc, const struct opt *opts)
{
	json_t *options = json_object_get(doc, "options");
	size_t i = 0;

	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		json_t *v;

		if (o->type == OPT_GROUP)
			continue;
		v = o->value ? initial_json(o) : NULL;
		if (v)
			json_object_set_new(json_array_get(options, i), "initial", v);
		i++;
	}
}

static void capture_fn(const struct opt *opts, const struct opt_usage *u, int parse_flags,
		       void *data)
{
	struct capture *cap = data;

	if (cap->doc)
		return; /* the first table is the command's */
	cap->doc = opt_doc_json(opts, u, parse_flags);
	add_initial_values(cap->doc, opts);
	opt_doc_roff_options(&cap->roff, opts);
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !(o->flags & OPT_HIDDEN))
			strvec_pushf(&cap->opts, "--%s", o->long_name);
	if (cap->name)
		opt_doc_subcommands(u, cap->name, &cap->subs);
}

static void capture_init(struct capture *cap, const char *name)
{
	cap->name = name;
	cap->doc = NULL;
	cap->roff = (struct sbuf)SBUF_INIT;
	strvec_init(&cap->opts);
	strvec_init(&cap->subs);
}

static void capture_release(struct capture *cap)
{
	json_decref(cap->doc);
	cap->doc = NULL;
	sbuf_release(&cap->roff);
	strvec_clear(&cap->opts);
	strvec_clear(&cap->subs);
}

/*
 * Call command `c` invoked as `name` in describe mode, with `sub` as its
 * argument when not NULL, into cap (capture_init first). Returns 0, or -1
 * when the command parsed no option table (it does not use
 * gdn_cmd_parse_opts). *sub_taken: a dispatcher passed `sub` on, so the
 * table is the subcommand's own.
 */
static int describe(const struct gdn_cmd *c, const char *name, const char *sub, struct capture *cap,
		    bool *sub_taken)
{
	struct gdn_ctx ctx = {0};
	const char *argv[] = {name, sub, NULL};
	int n;

	ctx.name = name;
	ctx.config = (struct gdn_config)GDN_CONFIG_INIT;
	strvec_init(&ctx.cfg_overrides);
	opt_describe_begin(capture_fn, cap, sub);
	c->fn(sub ? 2 : 1, argv, &ctx);
	n = opt_describe_end(sub_taken);
	gdn_config_release(&ctx.config);
	strvec_clear(&ctx.cfg_overrides);
	return n && cap->doc ? 0 : -1;
}

static bool is_alias_of(const struct gdn_cmd *a, const struct gdn_cmd *c)
{
	return (a->flags & CMD_ALIAS) && a->alias_of && !strcmp(a->alias_of, c->name);
}

/* Describe c and its subcommands into a new JSON document; NULL when c declares no options. */
static json_t *command_json(const struct gdn_cmd *c)
{
	struct capture cap;
	json_t *doc, *aliases = json_array(), *jsubs = json_array();

	capture_init(&cap, c->name);
	if (describe(c, c->name, NULL, &cap, NULL)) {
		capture_release(&cap);
		json_decref(aliases);
		json_decref(jsubs);
		return NULL;
	}
	doc = gdn_json_doc(COMMAND_JSON_SCHEMA);
	json_object_set_new(doc, "name", json_string(c->name));
	json_object_set_new(doc, "summary", gdn_json_string_lossy(c->summary));
	json_object_set_new(doc, "alias_of", c->alias_of ? json_string(c->alias_of) : json_null());
	json_object_set_new(doc, "hidden", json_boolean(c->flags & CMD_HIDDEN));
	for (const struct gdn_cmd *a = gdn_commands; a->name; a++)
		if (is_alias_of(a, c))
			json_array_append_new(aliases, json_string(a->name));
	json_object_set_new(doc, "aliases", aliases);
	json_object_update(doc, cap.doc);
	for (size_t i = 0; i < cap.subs.nr; i++) {
		struct capture sc;
		bool taken = false;
		json_t *js;

		capture_init(&sc, NULL);
		js = json_object();
		json_object_set_new(js, "name", json_string(cap.subs.v[i]));
		/* without a table of its own, the command's options serve it */
		if (!describe(c, c->name, cap.subs.v[i], &sc, &taken) && taken)
			json_object_update(js, sc.doc);
		json_array_append_new(jsubs, js);
		capture_release(&sc);
	}
	json_object_set_new(doc, "subcommands", jsubs);
	capture_release(&cap);
	return doc;
}

json_t *gdn_help_commands_json(void)
{
	json_t *doc = gdn_json_doc(COMMANDS_JSON_SCHEMA), *cmds = json_array(), *g = json_array();

	for (size_t i = 0; i < ARRAY_SIZE(global_opts); i++) {
		json_t *o = json_object();

		json_object_set_new(o, "names", json_string(global_opts[i].names));
		json_object_set_new(
		    o, "arg", global_opts[i].arg ? json_string(global_opts[i].arg) : json_null());
		json_object_set_new(o, "help", json_string(global_opts[i].help));
		json_array_append_new(g, o);
	}
	json_object_set_new(doc, "version", json_string(GDNCTL_VERSION));
	json_object_set_new(doc, "global_options", g);
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++) {
		json_t *one;

		if (c->flags & CMD_HIDDEN)
			continue;
		one = command_json(c);
		if (!one) { /* a command without an option table: name and summary only */
			one = json_object();
			json_object_set_new(one, "name", json_string(c->name));
			json_object_set_new(one, "summary", gdn_json_string_lossy(c->summary));
			json_object_set_new(one, "alias_of",
					    c->alias_of ? json_string(c->alias_of) : json_null());
		}
		json_object_del(one, "schema");
		json_array_append_new(cmds, one);
	}
	json_object_set_new(doc, "commands", cmds);
	return doc;
}

/* ---- man pages ---- */

static void roff_upper(struct sbuf *out, const char *s)
{
	struct sbuf up = SBUF_INIT;

	for (; *s; s++)
		sbuf_addch(&up, toupper((unsigned char)*s));
	roff_escape(out, up.buf);
	sbuf_release(&up);
}

static void man_header(struct sbuf *out, const char *page)
{
	sbuf_adds(out, ".TH ");
	roff_upper(out, page);
	sbuf_adds(out, " 1 \"\" \"gdnctl ");
	roff_escape(out, GDNCTL_VERSION);
	sbuf_adds(out, "\" \"gdnctl manual\"\n.nh\n.ad l\n");
}

/* Usage lines (a JSON array) as a SYNOPSIS: one line each, "gdnctl" in bold. */
static void man_synopsis(struct sbuf *out, const json_t *lines)
{
	size_t i;
	json_t *v;

	sbuf_adds(out, ".nf\n");
	json_array_foreach(lines, i, v)
	{
		const char *line = json_string_value(v);

		if (!line)
			continue;
		if (!strncmp(line, "gdnctl ", 7)) {
			sbuf_adds(out, "\\fBgdnctl\\fR ");
			line += 7;
		}
		roff_escape(out, line);
		sbuf_addch(out, '\n');
	}
	sbuf_adds(out, ".fi\n");
}

static bool strvec_same(const struct strvec *a, const struct strvec *b)
{
	if (a->nr != b->nr)
		return false;
	for (size_t i = 0; i < a->nr; i++)
		if (strcmp(a->v[i], b->v[i]))
			return false;
	return true;
}

/* Pre-wrapped paragraphs (a usage's `extra`) kept as they are. */
static void man_preformatted(struct sbuf *out, const char *text)
{
	sbuf_adds(out, ".PP\n.nf\n");
	roff_escape(out, text);
	if (out->len && out->buf[out->len - 1] != '\n')
		sbuf_addch(out, '\n');
	sbuf_adds(out, ".fi\n");
}

static void man_exit_status(struct sbuf *out)
{
	sbuf_adds(out, ".SH EXIT STATUS\n");
	for (size_t i = 0; i < ARRAY_SIZE(exit_codes); i++) {
		sbuf_adds(out, ".TP\n.B ");
		roff_escape(out, exit_codes[i].code);
		sbuf_addch(out, '\n');
		roff_escape(out, exit_codes[i].meaning);
		sbuf_addch(out, '\n');
	}
}

static void man_see_also_item(struct sbuf *out, const char *page, bool *first)
{
	sbuf_adds(out, *first ? "" : ",\n");
	sbuf_adds(out, ".BR ");
	roff_escape(out, page);
	sbuf_adds(out, " (1)");
	*first = false;
}

/* gdnctl(1): the commands, aliases and global options from the tables. */
static void man_main(struct sbuf *out)
{
	bool first = true;

	man_header(out, "gdnctl");
	sbuf_adds(out, ".SH NAME\ngdnctl \\- hill\\-climb the speed of ML kernels\n");
	sbuf_adds(
	    out,
	    ".SH SYNOPSIS\n.nf\n\\fBgdnctl\\fR [\\fB\\-C\\fR \\fIDIR\\fR] "
	    "[\\fB\\-c\\fR \\fIKEY=VALUE\\fR]... [\\fB\\-q\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]\n"
	    "\\fBgdnctl\\fR \\-\\-version | \\-\\-help | help \\fICOMMAND\\fR "
	    "[\\fISUBCOMMAND\\fR]\n.fi\n");
	sbuf_adds(
	    out,
	    ".SH DESCRIPTION\n"
	    "Hill\\-climb the speed of ML kernels: run tests and profiles on clusters,\n"
	    "read profiler traces, and drive an unattended optimisation loop.\n"
	    ".PP\n"
	    "One binary with subcommands.\n"
	    "\\fBgdnctl help\\fR \\fICOMMAND\\fR and \\fBgdnctl\\fR \\fICOMMAND\\fR "
	    "\\fB\\-h\\fR print the same text;\n"
	    "each command has its own page, \\fBgdnctl\\-\\fR\\fICOMMAND\\fR(1).\n"
	    ".PP\n"
	    "A long option may be abbreviated to a unique prefix of its name, of its\n"
	    "\\fB\\-\\-no\\-\\fR form or of \\fB\\-\\-help\\fR; an exact name always wins, and an\n"
	    "ambiguous prefix is a usage error that lists the candidates.\n"
	    "Time options take a duration (90s, 15m, 1.5h) or a plain number in the\n"
	    "unit their name says.\n");
	sbuf_adds(out, ".SH GLOBAL OPTIONS\n");
	for (size_t i = 0; i < ARRAY_SIZE(global_opts); i++) {
		sbuf_adds(out, ".TP\n\\fB");
		roff_escape(out, global_opts[i].names);
		sbuf_adds(out, "\\fR");
		if (global_opts[i].arg) {
			sbuf_adds(out, " \\fI");
			roff_escape(out, global_opts[i].arg);
			sbuf_adds(out, "\\fR");
		}
		sbuf_addch(out, '\n');
		roff_escape(out, global_opts[i].help);
		sbuf_addch(out, '\n');
	}
	sbuf_adds(out, ".SH COMMANDS\n");
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++) {
		if (c->flags & (CMD_HIDDEN | CMD_ALIAS))
			continue;
		sbuf_adds(out, ".TP\n\\fB");
		roff_escape(out, c->name);
		sbuf_adds(out, "\\fR\n");
		roff_escape(out, c->summary);
		sbuf_adds(out, "; see \\fBgdnctl\\-");
		roff_escape(out, c->name);
		sbuf_adds(out, "\\fR(1).\n");
	}
	sbuf_adds(out, ".SH ALIASES\nThe names of the original gdnctl.py keep working, "
		       "with the original flags:\n");
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++) {
		if ((c->flags & CMD_HIDDEN) || !(c->flags & CMD_ALIAS))
			continue;
		sbuf_adds(out, ".TP\n\\fB");
		roff_escape(out, c->name);
		sbuf_adds(out, "\\fR\nsame as \\fB");
		roff_escape(out, c->alias_of ? c->alias_of : "");
		sbuf_adds(out, "\\fR\n");
	}
	man_exit_status(out);
	sbuf_adds(out, ".SH ENVIRONMENT\n");
	for (size_t i = 0; i < gdn_cfg_schema_nr; i++) {
		const struct gdn_cfg_key *k = &gdn_cfg_schema[i];

		if (!k->env)
			continue;
		sbuf_adds(out, ".TP\n.B ");
		roff_escape(out, k->env);
		sbuf_adds(out, "\nsets the configuration key \\fB");
		roff_escape(out, k->key);
		sbuf_adds(out, "\\fR");
		if (k->help) {
			sbuf_adds(out, ": ");
			roff_escape(out, k->help);
		}
		sbuf_addch(out, '\n');
	}
	sbuf_adds(out, ".TP\n.B GDNCTL_TRACE\n"
		       "when 1, log every program gdnctl starts to standard error "
		       "(secrets masked)\n");
	sbuf_adds(out, ".SH FILES\n"
		       ".TP\n.I ~/.config/gdnctl/config.yaml\n"
		       "the user's configuration (\\fI$XDG_CONFIG_HOME/gdnctl/config.yaml\\fR "
		       "when set)\n"
		       ".TP\n.I gdnctl.yaml\n"
		       "the repository's configuration, in the root of its working tree\n"
		       ".PP\nPrecedence, highest first: \\fB\\-c\\fR \\fIKEY=VALUE\\fR, "
		       "the environment, the repository's file, the user's file, built\\-in "
		       "defaults; see \\fBgdnctl config keys\\fR.\n");
	sbuf_adds(out, ".SH SEE ALSO\n");
	for (const struct gdn_cmd *c = gdn_commands; c->name; c++) {
		char page[128];

		if (c->flags & (CMD_HIDDEN | CMD_ALIAS))
			continue;
		snprintf(page, sizeof(page), "gdnctl-%s", c->name);
		man_see_also_item(out, page, &first);
	}
	sbuf_addch(out, '\n');
}

static void man_options(struct sbuf *out, const struct capture *cap)
{
	sbuf_adds(out, ".SH OPTIONS\n");
	sbuf_add(out, cap->roff.buf, cap->roff.len);
}

/*
 * gdnctl-CMD(1) for a command that is not an alias; returns -1 when c is
 * an alias or declares no option table.
 */
static int man_command(struct sbuf *out, const struct gdn_cmd *c)
{
	struct capture cap;
	char page[128];
	const char *s;
	bool first = true;
	int ret = -1;

	capture_init(&cap, c->name);
	if ((c->flags & CMD_ALIAS) || describe(c, c->name, NULL, &cap, NULL))
		goto out;
	snprintf(page, sizeof(page), "gdnctl-%s", c->name);
	man_header(out, page);
	sbuf_adds(out, ".SH NAME\n");
	roff_escape(out, page);
	sbuf_adds(out, " \\- ");
	roff_escape(out, c->summary);
	sbuf_addch(out, '\n');
	sbuf_adds(out, ".SH SYNOPSIS\n");
	man_synopsis(out, json_object_get(cap.doc, "usage"));
	sbuf_adds(out, ".SH DESCRIPTION\n");
	s = json_string_value(json_object_get(cap.doc, "description"));
	roff_escape(out, s ? s : c->summary);
	sbuf_addch(out, '\n');
	s = json_string_value(json_object_get(cap.doc, "extra"));
	if (s)
		man_preformatted(out, s);
	man_options(out, &cap);
	for (size_t i = 0; i < cap.subs.nr; i++) {
		struct capture sc;
		bool taken = false;

		capture_init(&sc, NULL);
		if (!describe(c, c->name, cap.subs.v[i], &sc, &taken) && taken) {
			sbuf_adds(out, ".SH ");
			roff_upper(out, c->name);
			sbuf_addch(out, ' ');
			roff_upper(out, cap.subs.v[i]);
			sbuf_adds(out, "\n");
			man_synopsis(out, json_object_get(sc.doc, "usage"));
			s = json_string_value(json_object_get(sc.doc, "description"));
			if (s) {
				sbuf_adds(out, ".PP\n");
				roff_escape(out, s);
				sbuf_addch(out, '\n');
			}
			s = json_string_value(json_object_get(sc.doc, "extra"));
			if (s)
				man_preformatted(out, s);
			sbuf_add(out, sc.roff.buf, sc.roff.len);
		}
		capture_release(&sc);
	}
	for (const struct gdn_cmd *a = gdn_commands; a->name; a++) {
		struct capture ac;

		if (!is_alias_of(a, c) || (a->flags & CMD_HIDDEN))
			continue;
		if (first)
			sbuf_adds(out, ".SH ALIASES\n");
		first = false;
		capture_init(&ac, NULL);
		sbuf_adds(out, ".SS ");
		roff_escape(out, a->name);
		sbuf_adds(out, "\nThe original gdnctl.py name of \\fB");
		roff_escape(out, c->name);
		sbuf_adds(out, "\\fR");
		if (!describe(a, a->name, NULL, &ac, NULL) && !strvec_same(&ac.opts, &cap.opts)) {
			sbuf_adds(out, ", with the original's options:\n.PP\n");
			man_synopsis(out, json_object_get(ac.doc, "usage"));
			sbuf_add(out, ac.roff.buf, ac.roff.len);
		} else {
			sbuf_adds(out, ", with the same options.\n");
		}
		capture_release(&ac);
	}
	man_exit_status(out);
	sbuf_adds(out, ".SH SEE ALSO\n");
	first = true;
	man_see_also_item(out, "gdnctl", &first);
	for (const struct gdn_cmd *o = gdn_commands; o->name; o++) {
		if (o == c || (o->flags & (CMD_HIDDEN | CMD_ALIAS)))
			continue;
		snprintf(page, sizeof(page), "gdnctl-%s", o->name);
		man_see_also_item(out, page, &first);
	}
	sbuf_addch(out, '\n');
	ret = 0;
out:
	capture_release(&cap);
	return ret;
}

/* ---- the command ---- */

static const struct opt_usage help_usage = {
    "gdnctl help [COMMAND [SUBCOMMAND]]\n"
    "gdnctl help --json [COMMAND [SUBCOMMAND]]\n"
    "gdnctl help --man [COMMAND]\n"
    "gdnctl help --commands",
    "Show help for gdnctl or one command, or describe them for tools.",
    "'gdnctl help' is 'gdnctl --help'; 'gdnctl help COMMAND [SUBCOMMAND]'\n"
    "prints what 'gdnctl COMMAND [SUBCOMMAND] -h' prints. --json describes the\n"
    "option tables (schema " COMMAND_JSON_SCHEMA " for one command,\n" COMMANDS_JSON_SCHEMA
    " for all); --man prints the roff man page gdnctl(1) or\n"
    "gdnctl-COMMAND(1)."};

static int help_json(const struct gdn_cmd *c, const char *sub)
{
	json_t *doc, *subs, *v;
	size_t i;

	if (!c)
		return gdn_json_print(gdn_help_commands_json()) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
	doc = command_json(c);
	if (!doc) {
		gdn_error("'%s' declares no option table to describe", c->name);
		return GDN_EXIT_FAILED;
	}
	if (!sub)
		return gdn_json_print(doc) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
	subs = json_object_get(doc, "subcommands");
	json_array_foreach(subs, i, v)
	{
		if (!strcmp(json_string_value(json_object_get(v, "name")), sub)) {
			json_t *one = gdn_json_doc(COMMAND_JSON_SCHEMA);

			json_object_update(one, v);
			json_object_set_new(one, "name", json_sprintf("%s %s", c->name, sub));
			json_decref(doc);
			return gdn_json_print(one) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
		}
	}
	json_decref(doc);
	gdn_error("'%s' is not a subcommand of '%s'", sub, c->name);
	return GDN_EXIT_USAGE;
}

static int print_sbuf(const struct sbuf *sb)
{
	fwrite(sb->buf, 1, sb->len, stdout);
	return GDN_EXIT_OK;
}

/* `gdnctl help CMD SUB`: what `gdnctl CMD SUB -h` prints, for a subcommand CMD's usage names. */
static int help_subcommand(const struct gdn_cmd *c, const char *sub, struct gdn_ctx *ctx)
{
	struct capture cap;
	const char *hargv[] = {c->name, sub, "-h", NULL};
	int code;

	capture_init(&cap, c->name);
	if (describe(c, c->name, NULL, &cap, NULL) || !strvec_contains(&cap.subs, sub)) {
		struct gdn_suggest sg = GDN_SUGGEST_INIT(sub);
		struct sbuf hint = SBUF_INIT;

		for (size_t i = 0; i < cap.subs.nr; i++)
			gdn_suggest_add(&sg, cap.subs.v[i]);
		gdn_suggest_format(&sg, NULL, &hint);
		gdn_error("'%s' is not a subcommand of '%s'; see 'gdnctl help %s'%s", sub, c->name,
			  c->name, hint.buf);
		gdn_suggest_release(&sg);
		sbuf_release(&hint);
		code = GDN_EXIT_USAGE;
	} else {
		ctx->name = c->name;
		code = c->fn(3, hargv, ctx);
	}
	capture_release(&cap);
	return code;
}

/* `gdnctl help [CMD [SUB]]`: the global help, or exactly what `gdnctl CMD [SUB] -h` prints. */
int cmd_help(int argc, const char **argv, struct gdn_ctx *ctx)
{
	int json = 0, man = 0, commands = 0, code = GDN_EXIT_OK;
	struct opt opts[] = {
	    OPT_BOOL_(0, "json", &json, "describe the commands and their options as JSON"),
	    OPT_BOOL_(0, "man", &man, "print the man page (roff) of gdnctl or of COMMAND"),
	    OPT_BOOL_(0, "commands", &commands, "list the command names, one per line"),
	    OPT_END_(),
	};
	struct strvec rest = STRVEC_INIT;
	struct sbuf out = SBUF_INIT;
	const struct gdn_cmd *c = NULL;
	const char *hargv[] = {NULL, "-h", NULL};

	if (!gdn_cmd_parse_opts(opts, &help_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (json + man + commands > 1 || rest.nr > (man ? 1u : 2u) || (commands && rest.nr)) {
		gdn_error(
		    "usage: gdnctl help [--json | --man] [COMMAND [SUBCOMMAND]]; see 'gdnctl help "
		    "-h'");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (rest.nr) {
		c = gdn_cmd_find(rest.v[0]);
		if (!c) {
			gdn_error_unknown_command(rest.v[0]);
			code = GDN_EXIT_USAGE;
			goto out;
		}
	}
	if (commands) {
		for (c = gdn_commands; c->name; c++)
			if (!(c->flags & CMD_HIDDEN))
				printf("%s\n", c->name);
	} else if (json) {
		code = help_json(c, rest.nr > 1 ? rest.v[1] : NULL);
	} else if (man) {
		if (c && (c->flags & CMD_ALIAS))
			c = gdn_cmd_find(c->alias_of);
		if (!c)
			man_main(&out);
		else if (man_command(&out, c)) {
			gdn_error("'%s' declares no options to document", c->name);
			code = GDN_EXIT_FAILED;
			goto out;
		}
		code = print_sbuf(&out);
	} else if (!c) {
		gdn_print_global_help(stdout);
	} else if (rest.nr > 1) {
		code = help_subcommand(c, rest.v[1], ctx);
	} else {
		hargv[0] = c->name;
		ctx->name = c->name;
		code = c->fn(2, hargv, ctx);
	}
out:
	sbuf_release(&out);
	strvec_clear(&rest);
	return code;
}

int cmd_version(int argc, const char **argv, struct gdn_ctx *ctx)
{
	static const struct opt_usage usage = {"gdnctl version", "Print the version of gdnctl.",
					       NULL};
	struct opt opts[] = {OPT_END_()};
	struct strvec rest = STRVEC_INIT;
	int code = GDN_EXIT_OK;

	(void)ctx;
	if (gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		printf("gdnctl version %s\n", GDNCTL_VERSION);
	strvec_clear(&rest);
	return code;
}
