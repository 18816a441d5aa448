/*
 * Private to the setup of `gdnctl loop` (setup.c, setup_paths.c,
 * setup_gate.c, setup_workers.c): how a step fails, and the helpers the
 * steps share.
 */
#ifndef GDNCTL_LOOP_SETUP_IMPL_H
#define GDNCTL_LOOP_SETUP_IMPL_H

#include "gdnctl/loop_setup.h"
#include "gdnctl/xalloc.h"

#define MARIN_TARGETS "--hold-dev-tpu, --validation-ray-cluster, --validation-ray-cluster-auto"

/* -1 for an error a module filled in s->err. */
static inline int failed(struct gdn_loop_setup *s, enum gdn_loop_setup_style style)
{
	s->style = style;
	if (!s->err.code)
		s->err.code = GDN_EFAILED;
	return -1;
}

/* A directive file named on the command line is missing or empty: the original's message. */
static inline int failed_directive(struct gdn_loop_setup *s)
{
	if (s->err.code == GDN_ENOTFOUND)
		s->err.code = GDN_EUSAGE;
	return failed(s, GDN_SETUP_PLAIN);
}

/* An unknown --backend is a usage error, an unknown loop.backend a configuration error. */
static inline int failed_backend(struct gdn_loop_setup *s)
{
	if (s->err.code == GDN_ENOTFOUND)
		s->err.code = s->a.backend ? GDN_EUSAGE : GDN_ECONFIG;
	return failed(s, GDN_SETUP_ERROR);
}

/* The same, shown as a usage error whatever the module's code. */
static inline int failed_usage(struct gdn_loop_setup *s)
{
	s->style = GDN_SETUP_ERROR;
	s->err.code = GDN_EUSAGE;
	return -1;
}

static inline bool nonempty(const char *s)
{
	return s && *s;
}

/* An absolute path: `p` resolved against `base` (not required to exist). */
static inline char *abspath(const char *base, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xstrfmt("%s/%s", base, p);
}

/* setup_paths.c: the working tree (s->workdir) of the options. 0 or -1. */
int setup_find_workdir(struct gdn_loop_setup *s);

#endif
