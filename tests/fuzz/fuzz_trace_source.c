/*
 * Fuzz what the loop reads out of a profile run's output to find where its
 * trace went (src/loop/trace_source.c): a gs://.../plugins/profile/... URI,
 * the uri= of a hosted-XProf link (percent-decoded), a W&B run. Any bytes
 * must give a well-formed answer or none, never crash or leak.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace_source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const bases[] = {NULL, "http://127.0.0.1:8080"};

	for (size_t i = 0; i < sizeof(bases) / sizeof(*bases); i++) {
		struct gdn_trace_refs r;

		gdn_trace_refs_scan((const char *)data, size, bases[i], &r);
		if (r.gcs) {
			/* gs://BUCKET/.../plugins/profile[/SESSION]: nothing a shell or URL splits
			 */
			const char *pp = strstr(r.gcs, "/plugins/profile");

			if (strncmp(r.gcs, "gs://", 5) || r.gcs[5] == '/' || !pp ||
			    !strchr(r.gcs + 5, '/') || strchr(pp + 16 + (pp[16] == '/'), '/'))
				BUG("malformed profile URI '%s'", r.gcs);
			for (const char *c = r.gcs; *c; c++)
				if ((unsigned char)*c <= 0x20 || *c == 0x7f)
					BUG("profile URI with a space or control character");
			if (!r.gcs_from ||
			    (strcmp(r.gcs_from, "uri") && strcmp(r.gcs_from, "xprof-link")))
				BUG("profile URI from nowhere");
		} else if (r.gcs_from) {
			BUG("gcs_from without a URI");
		}
		if (!r.wandb != !r.wandb_url)
			BUG("a W&B run without its URL or the reverse");
		if (r.wandb && strncmp(r.wandb, "wandb:", 6))
			BUG("W&B run '%s'", r.wandb);
		gdn_trace_refs_release(&r);
	}
	return 0;
}
