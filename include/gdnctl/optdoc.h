/*
 * Documents generated from option tables (include/gdnctl/opt.h): a JSON
 * description, roff text for man pages, and the subcommands a usage names.
 * Nothing here prints; commands (src/cmd/cmd_help.c, cmd_completion.c)
 * put the results on standard output.
 */
#ifndef GDNCTL_OPTDOC_H
#define GDNCTL_OPTDOC_H

#include <jansson.h>
#include "gdnctl/compat.h"

struct opt;
struct opt_usage;
struct sbuf;
struct strvec;

/* "bool", "int", "float", "duration", "string", "choice" (also OPT_ENUM), "list", "kv"
 * ("group", "end"). */
const char *opt_type_name(int type);

/*
 * New reference: {"usage": [lines], "description", "extra", "positional",
 * "options": [{"long", "short", "type", "arg", "help", "choices", "choice_help"
 * (only OPT_ENUM: {name: one-line help}), "default",
 * "negatable", "hidden", "required", "repeatable", "group", "min", "max"}]}.
 * `parse_flags` are the OPT_PARSE_* flags the command parses with.
 */
json_t *opt_doc_json(const struct opt *opts, const struct opt_usage *u, int parse_flags);

/*
 * The subcommands the usage lines of command `name` name: the word after
 * "gdnctl NAME " when it is a lowercase word (brackets stripped), in order,
 * without duplicates ("gdnctl config [show] ..." names "show"; "[options]" is no
 * subcommand).
 */
void opt_doc_subcommands(const struct opt_usage *u, const char *name, struct strvec *out);

/*
 * Append s as roff text: backslashes as \e, '-' as \-, '"' as \(dq, a '.' or '\'' that
 * starts a line behind \&, and bytes beyond ASCII as \[uXXXX] (UTF-8
 * decoded; invalid bytes become '?').
 */
void roff_escape(struct sbuf *out, const char *s);
/* The same for the first len bytes of s. */
void roff_escape_len(struct sbuf *out, const char *s, size_t len);

/*
 * Append the options as man page paragraphs: ".SS" for each group title,
 * ".TP" with the option names in bold, choices or argument name, and the
 * help with the notes -h prints ("(repeatable)", "(required)", "(default:
 * X)"). Hidden options are left out; -h/--help ends the list.
 */
void opt_doc_roff_options(struct sbuf *out, const struct opt *opts);

#endif
