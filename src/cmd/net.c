/* The network options shared by download-trace and metrics. */
#include "gdnctl/compat.h"
#include "gdnctl/cmd_net.h"
#include "gdnctl/http.h"

void gdn_net_args_init(struct gdn_net_args *a, long stall_ms, long deadline_ms)
{
	a->retries = 4;
	a->retry_base_ms = 1000;
	a->retry_max_ms = 30000;
	a->stall_ms = stall_ms;
	a->connect_ms = 15000;
	a->deadline_ms = deadline_ms;
}

void gdn_net_args_apply(const struct gdn_net_args *a, struct gdn_http_opts *ho)
{
	ho->retries = (int)a->retries;
	ho->retry_base_ms = a->retry_base_ms;
	ho->retry_max_ms = a->retry_max_ms;
	ho->stall_ms = a->stall_ms;
	ho->connect_timeout_ms = a->connect_ms;
	ho->deadline = a->deadline_ms > 0 ? gdn_now_ms() + a->deadline_ms : 0;
}
