/*
 * The loop's summary (counts, usage, what was kept) and the failure
 * policies' arithmetic: the pieces of the loop (src/loop/run.c and below)
 * that need none of its state.
 */
#include "gdnctl/compat.h"
#include "gdnctl/loop.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/xalloc.h"

enum gdn_loop_verdict gdn_loop_policy_apply(enum gdn_loop_policy p, long *failures,
					    long max_failures, bool *counted)
{
	*counted = false;
	if (p == GDN_POLICY_FAIL)
		return GDN_VERDICT_EXIT;
	if (p == GDN_POLICY_COUNT_FAILURE) {
		(*failures)++;
		*counted = true;
		if (max_failures >= 0 && *failures > max_failures)
			return GDN_VERDICT_EXIT;
	}
	return GDN_VERDICT_NEXT;
}

json_t *gdn_loop_usage_json(const struct gdn_agent_usage *u, long iterations)
{
	if (iterations <= 0)
		return json_null();
	return json_pack("{sIsIsIsoso}", "iterations", (json_int_t)iterations, "input_tokens",
			 (json_int_t)(u->input_tokens > 0 ? u->input_tokens : 0), "output_tokens",
			 (json_int_t)(u->output_tokens > 0 ? u->output_tokens : 0), "tokens",
			 json_integer(gdn_loop_usage_tokens(u)), "cost_usd",
			 u->cost_usd >= 0 ? json_real(u->cost_usd) : json_null());
}

int64_t gdn_loop_usage_tokens(const struct gdn_agent_usage *u)
{
	return gdn_add_sat_i64(gdn_add_sat_i64(u->input_tokens > 0 ? u->input_tokens : 0,
					       u->output_tokens > 0 ? u->output_tokens : 0),
			       u->tokens > 0 ? u->tokens : 0);
}

void gdn_loop_summary_release(struct gdn_loop_summary *s)
{
	free(s->run_id);
	free(s->stop_reason);
	free(s->journal);
	free(s->champion);
	free(s->champion_ref);
	strvec_clear(&s->stashes_kept);
	strvec_clear(&s->refs_kept);
	memset(s, 0, sizeof(*s));
	strvec_init(&s->stashes_kept);
	strvec_init(&s->refs_kept);
}

json_t *gdn_loop_summary_json(const struct gdn_loop_summary *s)
{
	json_t *doc = json_object(), *kinds = json_object(), *kept = json_array();

	json_object_set_new(doc, "schema", json_string("gdnctl.loop_summary.v1"));
	json_object_set_new(doc, "run", s->run_id ? json_string(s->run_id) : json_null());
	json_object_set_new(doc, "iterations", json_integer(s->iterations_run));
	json_object_set_new(doc, "commits", json_integer(s->commits));
	json_object_set_new(doc, "failures", json_integer(s->failures));
	for (int k = 0; k < GDN_FAIL_NR; k++)
		json_object_set_new(kinds, gdn_loop_failure_name(k),
				    json_integer(s->fail_kinds[k]));
	json_object_set_new(doc, "failures_by_kind", kinds);
	json_object_set_new(doc, "agent_seconds", json_real((double)s->agent_ms / 1000.0));
	if (s->usage_iterations > 0) /* only when the agent reported any */
		json_object_set_new(doc, "usage",
				    gdn_loop_usage_json(&s->usage, s->usage_iterations));
	json_object_set_new(doc, "stop_reason",
			    json_string(s->stop_reason ? s->stop_reason : "unknown"));
	json_object_set_new(doc, "exit_code", json_integer(s->exit_code));
	for (size_t i = 0; i < s->stashes_kept.nr; i++) {
		const char *sp = strchr(s->stashes_kept.v[i], ' ');
		json_t *o = json_object();

		json_object_set_new(
		    o, "sha",
		    json_stringn(s->stashes_kept.v[i], sp ? (size_t)(sp - s->stashes_kept.v[i])
							  : strlen(s->stashes_kept.v[i])));
		json_object_set_new(o, "message", json_string(sp ? sp + 1 : ""));
		json_array_append_new(kept, o);
	}
	json_object_set_new(doc, "stashes_kept", kept);
	kept = json_array();
	for (size_t i = 0; i < s->refs_kept.nr; i++) {
		const char *sp = strchrnul(s->refs_kept.v[i], ' ');

		json_array_append_new(kept, json_pack("{s:s%,s:s}", "ref", s->refs_kept.v[i],
						      (size_t)(sp - s->refs_kept.v[i]), "what",
						      *sp ? sp + 1 : ""));
	}
	json_object_set_new(doc, "refs_kept", kept);
	if (s->champion) {
		json_object_set_new(doc, "champion", json_string(s->champion));
		json_object_set_new(doc, "champion_ref",
				    s->champion_parked ? json_string(s->champion_ref)
						       : json_null());
	}
	json_object_set_new(doc, "journal", s->journal ? json_string(s->journal) : json_null());
	return doc;
}
