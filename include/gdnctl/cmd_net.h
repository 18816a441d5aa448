/*
 * The network options shared by the commands that talk HTTP
 * (download-trace, metrics): one declaration of the option rows, their
 * defaults and how they become struct gdn_http_opts.
 */
#ifndef GDNCTL_CMD_NET_H
#define GDNCTL_CMD_NET_H

#include "gdnctl/compat.h"
#include "gdnctl/opt.h"

struct gdn_http_opts;

struct gdn_net_args {
	long retries;
	long retry_base_ms, retry_max_ms;
	long stall_ms, connect_ms, deadline_ms;
};

/* Defaults that differ per command: stall and deadline (both ms; 0: never). */
void gdn_net_args_init(struct gdn_net_args *a, long stall_ms, long deadline_ms);
/* Fill the libcurl layer's options; the deadline starts now. */
void gdn_net_args_apply(const struct gdn_net_args *a, struct gdn_http_opts *ho);

/* The "Network" rows of an option table; stall_d and deadline_d are the shown defaults. */
#define GDN_NET_OPTS(a, stall_d, deadline_d)                                                    \
	OPT_GROUP_("Network"),                                                                  \
	    OPT_INT_(0, "retries", &(a)->retries, "N",                                          \
		     "retries per request (connection errors, 5xx, 429, stalls)", "4", 0, 100), \
	    OPT_DURATION_(0, "retry-base-delay", &(a)->retry_base_ms,                           \
			  "first backoff, doubled per retry (with jitter)", "1s"),              \
	    OPT_DURATION_(0, "retry-max-delay", &(a)->retry_max_ms, "longest backoff", "30s"),  \
	    OPT_DURATION_(0, "stall-timeout", &(a)->stall_ms,                                   \
			  "retry a request that receives nothing for this long (0: never)",     \
			  stall_d),                                                             \
	    OPT_DURATION_(0, "connect-timeout", &(a)->connect_ms, "per connection attempt",     \
			  "15s"),                                                               \
	    OPT_DURATION_(0, "deadline", &(a)->deadline_ms,                                     \
			  "give up on everything after this long (0: never)", deadline_d)

#endif
