/*
 * `gdnctl completion bash|zsh`: a shell completion script generated from
 * the command table and every command's option table (read in describe
 * mode through gdn_help_commands_json), so it never lags behind the code.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/help.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

static const struct opt_usage completion_usage = {
    "gdnctl completion bash\ngdnctl completion zsh",
    "Print a shell completion script for bash or zsh.",
    "The script completes command names, each command's options, the values of\n"
    "options with a fixed set of choices, file and directory arguments, and the\n"
    "subcommands of trace and config. It is generated from gdnctl's own tables.\n"
    "bash: source <(gdnctl completion bash), or save it as\n"
    "/etc/bash_completion.d/gdnctl. zsh: save it as _gdnctl in a directory of\n"
    "$fpath before compinit runs. See docs/gdnctl-completion.md."};

/* What to complete after an option: nothing (a flag), choices, a file, a directory, any value. */
enum arg_kind { ARG_NONE, ARG_CHOICE, ARG_FILE, ARG_DIR, ARG_VALUE };

static enum arg_kind arg_kind(const json_t *o)
{
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *arg = json_string_value(json_object_get(o, "arg"));

	if (!type || !strcmp(type, "bool"))
		return ARG_NONE;
	if (!strcmp(type, "choice"))
		return ARG_CHOICE;
	if (arg && strstr(arg, "DIR"))
		return ARG_DIR;
	if (arg && (strstr(arg, "PATH") || strstr(arg, "FILE")))
		return ARG_FILE;
	return ARG_VALUE;
}

/* Whether the positional arguments are command names ("gdnctl help [COMMAND]"). */
static bool takes_command(const json_t *spec)
{
	size_t i;
	json_t *u;

	json_array_foreach(json_object_get(spec, "usage"), i, u)
	{
		const char *line = json_string_value(u), *p;

		for (p = line ? strstr(line, "COMMAND") : NULL; p; p = strstr(p + 1, "COMMAND")) {
			bool start = p == line || p[-1] == ' ' || p[-1] == '[';
			bool end = !p[7] || p[7] == ' ' || p[7] == ']';

			if (start && end)
				return true;
		}
	}
	return false;
}

static bool visible(const json_t *o)
{
	return !json_is_true(json_object_get(o, "hidden"));
}

static const char *jstr(const json_t *j, const char *key)
{
	const char *s = json_string_value(json_object_get(j, key));

	return s ? s : "";
}

/* ---- bash ---- */

/* The words after "--": every option name (and --no-NAME), space separated. */
static void bash_option_words(struct sbuf *w, const json_t *spec)
{
	size_t i;
	json_t *o;

	json_array_foreach(json_object_get(spec, "options"), i, o)
	{
		const char *l = json_string_value(json_object_get(o, "long"));
		const char *s = json_string_value(json_object_get(o, "short"));

		if (!visible(o))
			continue;
		if (l)
			sbuf_addf(w, "%s--%s", w->len ? " " : "", l);
		if (l && json_is_true(json_object_get(o, "negatable")))
			sbuf_addf(w, " --no-%s", l);
		if (s)
			sbuf_addf(w, "%s-%s", w->len ? " " : "", s);
	}
	sbuf_addf(w, "%s--help", w->len ? " " : "");
}

/* One `case` arm of _gdnctl_spec for the command or subcommand `key`. */
static void bash_spec_arm(struct sbuf *out, const char *key, const json_t *spec, const char *subs)
{
	struct sbuf w = SBUF_INIT;

	bash_option_words(&w, spec);
	sbuf_adds(out, "\t");
	sbuf_add_shell_quoted(out, key);
	sbuf_adds(out, ")\n\t\t_gdnctl_o=");
	sbuf_add_shell_quoted(out, w.buf);
	if (subs && *subs) {
		sbuf_adds(out, " _gdnctl_s=");
		sbuf_add_shell_quoted(out, subs);
	}
	if (json_is_false(json_object_get(spec, "positional")))
		sbuf_adds(out, " _gdnctl_p=0");
	else if (takes_command(spec))
		sbuf_adds(out, " _gdnctl_p=command");
	sbuf_adds(out, " ;;\n");
	sbuf_release(&w);
}

/* One `case` arm of _gdnctl_arg: what each option of `key` takes. */
static void bash_arg_arm(struct sbuf *out, const char *key, const json_t *spec)
{
	struct sbuf arms = SBUF_INIT;
	size_t i;
	json_t *o;

	json_array_foreach(json_object_get(spec, "options"), i, o)
	{
		const char *l = json_string_value(json_object_get(o, "long"));
		const char *s = json_string_value(json_object_get(o, "short"));
		enum arg_kind k = arg_kind(o);
		struct sbuf val = SBUF_INIT;

		if (k == ARG_NONE || (!l && !s))
			continue;
		sbuf_adds(&arms, "\t\t");
		if (l) {
			sbuf_addf(&val, "--%s", l);
			sbuf_add_shell_quoted(&arms, val.buf);
		}
		if (s) {
			sbuf_reset(&val);
			sbuf_addf(&val, "-%s", s);
			sbuf_adds(&arms, l ? "|" : "");
			sbuf_add_shell_quoted(&arms, val.buf);
		}
		sbuf_adds(&arms, ") _gdnctl_a=");
		sbuf_reset(&val);
		switch (k) {
		case ARG_CHOICE: {
			size_t j;
			json_t *c;

			sbuf_adds(&val, "choice:");
			json_array_foreach(json_object_get(o, "choices"), j, c)
			    sbuf_addf(&val, "%s%s", j ? " " : "", json_string_value(c));
			break;
		}
		case ARG_FILE:
			sbuf_adds(&val, "file");
			break;
		case ARG_DIR:
			sbuf_adds(&val, "dir");
			break;
		default:
			sbuf_adds(&val, "value");
			break;
		}
		sbuf_add_shell_quoted(&arms, val.buf);
		sbuf_adds(&arms, " ;;\n");
		sbuf_release(&val);
	}
	if (arms.len) {
		sbuf_adds(out, "\t");
		sbuf_add_shell_quoted(out, key);
		sbuf_adds(out, ")\n\t\tcase $2 in\n");
		sbuf_add(out, arms.buf, arms.len);
		sbuf_adds(out, "\t\tesac ;;\n");
	}
	sbuf_release(&arms);
}

static const char bash_main[] =
    "# _gdnctl_value KIND CUR: complete the value of an option\n"
    "_gdnctl_value() {\n"
    "\tcase $1 in\n"
    "\tchoice:*) COMPREPLY=($(compgen -W \"${1#choice:}\" -- \"$2\")) ;;\n"
    "\tfile) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$2\")) ;;\n"
    "\tdir) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- \"$2\")) ;;\n"
    "\t*) COMPREPLY=() ;;\n"
    "\tesac\n"
    "}\n"
    "\n"
    "_gdnctl() {\n"
    "\tlocal cword=$COMP_CWORD cur=${COMP_WORDS[COMP_CWORD]} i=1 w cmd key sub= "
    "dashdash=0\n"
    "\tlocal _gdnctl_o _gdnctl_s _gdnctl_p _gdnctl_a\n"
    "\tCOMPREPLY=()\n"
    "\t# global options before the command\n"
    "\twhile [ \"$i\" -lt \"$cword\" ]; do\n"
    "\t\tw=${COMP_WORDS[i]}\n"
    "\t\tcase $w in\n"
    "\t\t-C | -c)\n"
    "\t\t\tif [ $((i + 1)) -eq \"$cword\" ]; then\n"
    "\t\t\t\t[ \"$w\" = -C ] && _gdnctl_value dir \"$cur\"\n"
    "\t\t\t\treturn 0\n"
    "\t\t\tfi\n"
    "\t\t\ti=$((i + 2)) ;;\n"
    "\t\t-*) i=$((i + 1)) ;;\n"
    "\t\t*) break ;;\n"
    "\t\tesac\n"
    "\tdone\n"
    "\tif [ \"$i\" -ge \"$cword\" ]; then\n"
    "\t\tcase $cur in\n"
    "\t\t-*) COMPREPLY=($(compgen -W \"$_gdnctl_globals\" -- \"$cur\")) ;;\n"
    "\t\t*) COMPREPLY=($(compgen -W \"$_gdnctl_commands\" -- \"$cur\")) ;;\n"
    "\t\tesac\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\tcmd=${COMP_WORDS[i]} key=$cmd\n"
    "\t_gdnctl_spec \"$cmd\" || return 0\n"
    "\t# the words between the command and the cursor: a subcommand, option values, --\n"
    "\tfor ((i = i + 1; i < cword; i++)); do\n"
    "\t\tw=${COMP_WORDS[i]}\n"
    "\t\tif [ \"$dashdash\" = 1 ]; then continue; fi\n"
    "\t\tcase $w in\n"
    "\t\t--) dashdash=1 ;;\n"
    "\t\t-*=* | =) ;;\n"
    "\t\t-?*)\n"
    "\t\t\t_gdnctl_arg \"$key\" \"$w\"\n"
    "\t\t\tif [ \"$_gdnctl_a\" != none ]; then\n"
    "\t\t\t\ti=$((i + 1))\n"
    "\t\t\t\t# --opt=value is split at '=' by COMP_WORDBREAKS\n"
    "\t\t\t\t[ \"${COMP_WORDS[i]}\" = = ] && i=$((i + 1))\n"
    "\t\t\tfi ;;\n"
    "\t\t*)\n"
    "\t\t\tif [ -z \"$sub\" ] && [ -n \"$_gdnctl_s\" ]; then\n"
    "\t\t\t\tsub=$w\n"
    "\t\t\t\t# a subcommand with a table of its own\n"
    "\t\t\t\tif _gdnctl_spec \"$cmd $sub\"; then key=\"$cmd $sub\"; else "
    "_gdnctl_spec \"$cmd\"; _gdnctl_s=; fi\n"
    "\t\t\tfi ;;\n"
    "\t\tesac\n"
    "\tdone\n"
    "\tif [ \"$dashdash\" = 1 ]; then\n"
    "\t\t_gdnctl_value file \"$cur\"\n"
    "\t\treturn 0\n"
    "\tfi\n"
    "\t# the value of an option: '--opt VALUE', '--opt=VALUE' (split into --opt = VALUE)\n"
    "\tw=${COMP_WORDS[cword - 1]}\n"
    "\tif [ \"$cur\" = = ]; then\n"
    "\t\tcur=\n"
    "\telif [ \"$w\" = = ] && [ \"$cword\" -gt 2 ]; then\n"
    "\t\tw=${COMP_WORDS[cword - 2]}\n"
    "\telif [ \"${cur#--*=}\" != \"$cur\" ]; then\n"
    "\t\tw=${cur%%=*} cur=${cur#*=}\n"
    "\tfi\n"
    "\tcase $w in\n"
    "\t-?*)\n"
    "\t\tif [ \"$cword\" -gt 1 ]; then\n"
    "\t\t\t_gdnctl_arg \"$key\" \"$w\"\n"
    "\t\t\tif [ \"$_gdnctl_a\" != none ]; then\n"
    "\t\t\t\t_gdnctl_value \"$_gdnctl_a\" \"$cur\"\n"
    "\t\t\t\treturn 0\n"
    "\t\t\tfi\n"
    "\t\tfi ;;\n"
    "\tesac\n"
    "\tcase $cur in\n"
    "\t-*) COMPREPLY=($(compgen -W \"$_gdnctl_o\" -- \"$cur\")) ;;\n"
    "\t*)\n"
    "\t\tif [ -z \"$sub\" ] && [ -n \"$_gdnctl_s\" ]; then\n"
    "\t\t\tCOMPREPLY=($(compgen -W \"$_gdnctl_s\" -- \"$cur\"))\n"
    "\t\telif [ \"$_gdnctl_p\" = command ]; then\n"
    "\t\t\tCOMPREPLY=($(compgen -W \"$_gdnctl_commands\" -- \"$cur\"))\n"
    "\t\telif [ \"$_gdnctl_p\" = 1 ]; then\n"
    "\t\t\t_gdnctl_value file \"$cur\"\n"
    "\t\tfi ;;\n"
    "\tesac\n"
    "\treturn 0\n"
    "}\n"
    "complete -F _gdnctl gdnctl\n";

static void gen_bash(struct sbuf *out, const json_t *doc)
{
	struct sbuf names = SBUF_INIT, globals = SBUF_INIT, spec = SBUF_INIT, args = SBUF_INIT;
	size_t i, j;
	json_t *c, *s, *g;

	json_array_foreach(json_object_get(doc, "global_options"), i, g)
	{
		struct strvec n = STRVEC_INIT;

		strvec_split(&n, jstr(g, "names"), ',');
		for (j = 0; j < n.nr; j++) {
			const char *name = n.v[j];

			while (*name == ' ')
				name++;
			sbuf_addf(&globals, "%s%s", globals.len ? " " : "", name);
		}
		strvec_clear(&n);
	}
	json_array_foreach(json_object_get(doc, "commands"), i, c)
	{
		struct sbuf subs = SBUF_INIT;
		const char *name = jstr(c, "name");

		sbuf_addf(&names, "%s%s", names.len ? " " : "", name);
		json_array_foreach(json_object_get(c, "subcommands"), j, s)
		    sbuf_addf(&subs, "%s%s", subs.len ? " " : "", jstr(s, "name"));
		bash_spec_arm(&spec, name, c, subs.buf);
		bash_arg_arm(&args, name, c);
		json_array_foreach(json_object_get(c, "subcommands"), j, s)
		{
			struct sbuf key = SBUF_INIT;

			if (!json_object_get(s, "options"))
				continue; /* served by the command's table */
			sbuf_addf(&key, "%s %s", name, jstr(s, "name"));
			bash_spec_arm(&spec, key.buf, s, NULL);
			bash_arg_arm(&args, key.buf, s);
			sbuf_release(&key);
		}
		sbuf_release(&subs);
	}
	sbuf_addf(out,
		  "# bash completion for gdnctl, generated by 'gdnctl completion bash' "
		  "(gdnctl %s).\n"
		  "# Install: source <(gdnctl completion bash), or save this as\n"
		  "# /etc/bash_completion.d/gdnctl or "
		  "~/.local/share/bash-completion/completions/gdnctl.\n\n",
		  jstr(doc, "version"));
	sbuf_adds(out, "_gdnctl_commands=");
	sbuf_add_shell_quoted(out, names.buf);
	sbuf_adds(out, "\n_gdnctl_globals=");
	sbuf_add_shell_quoted(out, globals.buf);
	sbuf_adds(out, "\n\n# _gdnctl_spec KEY: the options (_gdnctl_o), subcommands (_gdnctl_s)\n"
		       "# and whether positional arguments are taken (_gdnctl_p) of a command\n"
		       "# or of 'COMMAND SUBCOMMAND'; false when KEY is unknown\n"
		       "_gdnctl_spec() {\n\t_gdnctl_o='--help' _gdnctl_s= _gdnctl_p=1\n"
		       "\tcase $1 in\n");
	sbuf_add(out, spec.buf, spec.len);
	sbuf_adds(out, "\t*) return 1 ;;\n\tesac\n}\n\n"
		       "# _gdnctl_arg KEY OPTION: what OPTION takes (_gdnctl_a): none (a flag),\n"
		       "# choice:WORDS, file, dir or value\n"
		       "_gdnctl_arg() {\n\t_gdnctl_a=none\n\tcase $1 in\n");
	sbuf_add(out, args.buf, args.len);
	sbuf_adds(out, "\tesac\n}\n\n");
	sbuf_adds(out, bash_main);
	sbuf_release(&names);
	sbuf_release(&globals);
	sbuf_release(&spec);
	sbuf_release(&args);
}

/* ---- zsh ---- */

/* Append s for use inside an _arguments spec in single quotes: []:\ escaped, ' closed. */
static void zq(struct sbuf *out, const char *s, bool colon)
{
	for (; *s; s++) {
		if (*s == '\'')
			sbuf_adds(out, "'\\''");
		else if (*s == '[' || *s == ']' || *s == '\\' || (colon && *s == ':'))
			sbuf_addf(out, "\\%c", *s);
		else
			sbuf_addch(out, *s);
	}
}

/* The function name of a command or subcommand: _gdnctl_cmd_NAME[_SUB]. */
static void zsh_fn_name(struct sbuf *out, const char *name, const char *sub)
{
	sbuf_addf(out, "_gdnctl_cmd_%s", name);
	if (sub)
		sbuf_addf(out, "__%s", sub);
}

static void zsh_option_spec(struct sbuf *out, const json_t *o, const char *flag, bool negated)
{
	enum arg_kind k = negated ? ARG_NONE : arg_kind(o);
	size_t j;
	json_t *c;

	sbuf_adds(out, " \\\n\t\t'");
	if (json_is_true(json_object_get(o, "repeatable")))
		sbuf_addch(out, '*');
	sbuf_adds(out, flag);
	sbuf_addch(out, '[');
	if (negated)
		sbuf_adds(out, "do not: ");
	zq(out, jstr(o, "help"), false);
	sbuf_addch(out, ']');
	switch (k) {
	case ARG_NONE:
		break;
	case ARG_CHOICE:
		sbuf_adds(out, ":");
		zq(out, json_string_value(json_object_get(o, "long")) ? jstr(o, "long") : "value",
		   true);
		sbuf_adds(out, ":(");
		json_array_foreach(json_object_get(o, "choices"), j, c)
		{
			if (j)
				sbuf_addch(out, ' ');
			for (const char *p = json_string_value(c); p && *p; p++) {
				if (*p == '\'')
					sbuf_adds(out, "'\\''");
				else if (strchr(" ()\\:[]", *p))
					sbuf_addf(out, "\\%c", *p);
				else
					sbuf_addch(out, *p);
			}
		}
		sbuf_adds(out, ")");
		break;
	default:
		sbuf_adds(out, ":");
		zq(out, jstr(o, "arg"), true);
		sbuf_adds(out, k == ARG_FILE ? ":_files" : k == ARG_DIR ? ":_files -/" : ":");
		break;
	}
	sbuf_addch(out, '\'');
}

static void zsh_options(struct sbuf *out, const json_t *spec)
{
	size_t i;
	json_t *o;

	json_array_foreach(json_object_get(spec, "options"), i, o)
	{
		const char *l = json_string_value(json_object_get(o, "long"));
		const char *s = json_string_value(json_object_get(o, "short"));
		struct sbuf flag = SBUF_INIT;

		if (!visible(o))
			continue;
		if (s) {
			sbuf_addf(&flag, "-%s", s);
			zsh_option_spec(out, o, flag.buf, false);
		}
		if (l) {
			sbuf_reset(&flag);
			sbuf_addf(&flag, "--%s", l);
			zsh_option_spec(out, o, flag.buf, false);
		}
		if (l && json_is_true(json_object_get(o, "negatable"))) {
			sbuf_reset(&flag);
			sbuf_addf(&flag, "--no-%s", l);
			zsh_option_spec(out, o, flag.buf, true);
		}
		sbuf_release(&flag);
	}
	sbuf_adds(out, " \\\n\t\t'(- *)'{-h,--help}'[show the help]'");
}

/* A function completing the arguments of one command (words[1] is the command). */
static void zsh_command_fn(struct sbuf *out, const char *name, const json_t *c)
{
	const json_t *subs = json_object_get(c, "subcommands");
	size_t j;
	json_t *s;

	sbuf_adds(out, "\n");
	zsh_fn_name(out, name, NULL);
	sbuf_adds(out, "() {\n");
	if (json_array_size(subs)) {
		sbuf_adds(out,
			  "\tlocal curcontext=$curcontext state line\n\tlocal -a subs\n\tsubs=(");
		json_array_foreach(subs, j, s)
		{
			sbuf_adds(out, j ? " " : "");
			sbuf_addch(out, '\'');
			zq(out, jstr(s, "name"), true);
			if (json_object_get(s, "description")) {
				sbuf_addch(out, ':');
				zq(out, jstr(s, "description"), false);
			}
			sbuf_addch(out, '\'');
		}
		sbuf_adds(out, ")\n\t_arguments -C -s -S");
		zsh_options(out, c);
		sbuf_adds(out, " \\\n\t\t'1:subcommand:->sub' \\\n\t\t'*:: :->args'\n"
			       "\tcase $state in\n"
			       "\tsub) _describe -t subcommands subcommand subs ;;\n"
			       "\targs)\n\t\tcase $words[1] in\n");
		json_array_foreach(subs, j, s)
		{
			if (!json_object_get(s, "options"))
				continue;
			sbuf_adds(out, "\t\t");
			sbuf_add_shell_quoted(out, jstr(s, "name"));
			sbuf_adds(out, ") ");
			zsh_fn_name(out, name, jstr(s, "name"));
			sbuf_adds(out, " ;;\n");
		}
		sbuf_adds(out, "\t\t*) _files ;;\n\t\tesac ;;\n\tesac\n}\n");
		json_array_foreach(subs, j, s)
		{
			if (!json_object_get(s, "options"))
				continue;
			sbuf_adds(out, "\n");
			zsh_fn_name(out, name, jstr(s, "name"));
			sbuf_adds(out, "() {\n\t_arguments -s -S");
			zsh_options(out, s);
			if (!json_is_false(json_object_get(s, "positional")))
				sbuf_adds(out, " \\\n\t\t'*:file:_files'");
			sbuf_adds(out, "\n}\n");
		}
		return;
	}
	sbuf_adds(out, "\t_arguments -s -S");
	zsh_options(out, c);
	if (takes_command(c))
		sbuf_adds(out, " \\\n\t\t'*:command:_gdnctl_commands'");
	else if (!json_is_false(json_object_get(c, "positional")))
		sbuf_adds(out, " \\\n\t\t'*:file:_files'");
	sbuf_adds(out, "\n}\n");
}

static void gen_zsh(struct sbuf *out, const json_t *doc)
{
	struct sbuf fns = SBUF_INIT, cases = SBUF_INIT;
	size_t i;
	json_t *c, *g;

	sbuf_addf(out,
		  "#compdef gdnctl\n"
		  "# zsh completion for gdnctl, generated by 'gdnctl completion zsh' (gdnctl %s).\n"
		  "# Install: gdnctl completion zsh > DIR/_gdnctl with DIR in $fpath (before\n"
		  "# compinit runs), or after compinit: source <(gdnctl completion zsh)\n",
		  jstr(doc, "version"));
	json_array_foreach(json_object_get(doc, "commands"), i, c)
	{
		const char *name = jstr(c, "name");

		zsh_command_fn(&fns, name, c);
		sbuf_adds(&cases, "\t\t");
		sbuf_add_shell_quoted(&cases, name);
		sbuf_adds(&cases, ") ");
		zsh_fn_name(&cases, name, NULL);
		sbuf_adds(&cases, " ;;\n");
	}
	sbuf_add(out, fns.buf, fns.len);
	sbuf_adds(out, "\n_gdnctl_commands() {\n\tlocal -a cmds\n\tcmds=(\n");
	json_array_foreach(json_object_get(doc, "commands"), i, c)
	{
		sbuf_adds(out, "\t\t'");
		zq(out, jstr(c, "name"), true);
		sbuf_addch(out, ':');
		zq(out, jstr(c, "summary"), false);
		sbuf_adds(out, "'\n");
	}
	sbuf_adds(out, "\t)\n\t_describe -t commands 'gdnctl command' cmds\n}\n\n"
		       "_gdnctl() {\n\tlocal curcontext=$curcontext state line\n"
		       "\t_arguments -C");
	json_array_foreach(json_object_get(doc, "global_options"), i, g)
	{
		const char *names = jstr(g, "names"),
			   *arg = json_string_value(json_object_get(g, "arg"));
		struct strvec n = STRVEC_INIT;

		if (strchr(names, ',')) { /* "-h, --help" */
			sbuf_adds(out, " \\\n\t\t'(- *)'{-h,--help}'[");
			zq(out, jstr(g, "help"), false);
			sbuf_adds(out, "]'");
			continue;
		}
		strvec_split(&n, names, ' ');
		sbuf_adds(out, " \\\n\t\t'");
		if (arg)
			sbuf_addch(out, '*');
		zq(out, n.nr ? n.v[0] : names, false);
		sbuf_addch(out, '[');
		zq(out, jstr(g, "help"), false);
		sbuf_addch(out, ']');
		if (arg) {
			sbuf_addch(out, ':');
			zq(out, arg, true);
			sbuf_adds(out, strstr(arg, "DIR") ? ":_files -/" : ":");
		}
		sbuf_addch(out, '\'');
		strvec_clear(&n);
	}
	sbuf_adds(out, " \\\n\t\t'1:command:->command' \\\n\t\t'*:: :->args'\n"
		       "\tcase $state in\n"
		       "\tcommand) _gdnctl_commands ;;\n"
		       "\targs)\n"
		       "\t\tcurcontext=\"${curcontext%:*:*}:gdnctl-$words[1]:\"\n"
		       "\t\tcase $words[1] in\n");
	sbuf_add(out, cases.buf, cases.len);
	sbuf_adds(out, "\t\t*) _files ;;\n\t\tesac ;;\n\tesac\n}\n\n"
		       "if [ \"$funcstack[1]\" = _gdnctl ]; then\n"
		       "\t_gdnctl \"$@\"\n"
		       "else\n"
		       "\tcompdef _gdnctl gdnctl\n"
		       "fi\n");
	sbuf_release(&fns);
	sbuf_release(&cases);
}

int cmd_completion(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct opt opts[] = {OPT_END_()};
	struct strvec rest = STRVEC_INIT;
	struct sbuf out = SBUF_INIT;
	json_t *doc = NULL;
	int code = GDN_EXIT_OK;

	(void)ctx;
	if (!gdn_cmd_parse_opts(opts, &completion_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (rest.nr != 1 || (strcmp(rest.v[0], "bash") && strcmp(rest.v[0], "zsh"))) {
		if (rest.nr == 1)
			code = gdn_usage_error("completion", "unknown shell '%s' (bash or zsh)",
					       rest.v[0]);
		else
			code = gdn_usage_error("completion", "usage: gdnctl completion bash|zsh");
		goto out;
	}
	doc = gdn_help_commands_json();
	if (!strcmp(rest.v[0], "bash"))
		gen_bash(&out, doc);
	else
		gen_zsh(&out, doc);
	fwrite(out.buf, 1, out.len, stdout);
out:
	json_decref(doc);
	sbuf_release(&out);
	strvec_clear(&rest);
	return code;
}
