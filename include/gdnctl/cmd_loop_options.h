/*
 * The command line of `gdnctl loop` for its setup (src/cmd/loop_options.c):
 * what only the option table knows (which rows were given, their values as
 * the journal keeps them, parsing again), so that the setup below src/cmd/
 * receives parsed values (struct gdn_loop_setup: a, given) and no table.
 */
#ifndef GDNCTL_CMD_LOOP_OPTIONS_H
#define GDNCTL_CMD_LOOP_OPTIONS_H

#include "gdnctl/loop_setup.h"
#include <jansson.h>

struct opt;
struct strvec;
struct gdn_err;

/*
 * resume: with --resume, restore the run's decision options: `opts` was
 * parsed from argv (argc, argv); the journal of its log dir (--workdir,
 * --log-dir) names the options of the run, and the table is parsed again
 * from them and then argv over them, so that an option argv does not give
 * takes the run's value. An option argv gives with a different value is a
 * usage error naming it, unless --resume-override (then s->overridden).
 * Without a journal, a run or its options, nothing changes (the engine
 * reports a missing run). Before any other step: it starts the setup over.
 * check: the options given (s->given, from `opts`, the parsed table), then
 * gdn_loop_setup_validate(), then --until-time (s->lo.until_time).
 */
int gdn_loop_setup_resume(struct gdn_loop_setup *s, struct opt *opts, int argc, const char **argv);
/*
 * check also takes the loop.* configuration keys (gdn_loop_config_options)
 * for the options argv does not give (not when --resume restored a run's
 * options: the run keeps its own), journaled with the run's options; and
 * without --validation-mode (nor loop.validation_mode) turns validation on
 * (`required`) when project.test_command is set, except for codex-loop.
 */
int gdn_loop_setup_check(struct gdn_loop_setup *s, const struct opt *opts);

/* A loop.* configuration key and the option it gives a value when not given. */
struct gdn_loop_config_option {
	const char *key, *option;
};
/* The loop.* keys of the options (NULL-terminated). */
extern const struct gdn_loop_config_option gdn_loop_config_options[];

/*
 * A run's decision options: the rows of an option table other than
 * OPT_INVOCATION ones. Journaled as {"NAME": value}: a bool true or false
 * (--no-NAME), an integer, a number (S and M options in their unit), a
 * string (strings, choices, enum names, durations as "90s"), an array of
 * strings (repeatable options); so that gdn_loop_options_argv() turns them
 * back into the arguments that give the same values.
 *
 * The value of row `o` as journaled (new reference; null: no value, such as
 * a string option not given).
 */
json_t *gdn_loop_option_value(const struct opt *o);
/* New reference: the decision options given in the last opt_parse() of `opts`. */
json_t *gdn_loop_options_json(const struct opt *opts);
/*
 * Append to argv "--NAME" [VALUE] for each of `options` (null values and
 * false non-negatable bools add nothing). 0, or GDN_EPARSE naming an
 * option that is no decision option of `opts` or whose value has the wrong
 * JSON type.
 */
int gdn_loop_options_argv(const struct opt *opts, json_t *options, struct strvec *argv,
			  struct gdn_err *err);

#endif
