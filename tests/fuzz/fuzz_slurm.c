/*
 * Fuzz the parsers of what Slurm's clients and the job shim print: the
 * input (NUL bytes and all, without a terminating NUL) goes whole to each
 * parser (sbatch --parsable, squeue, sacct,
 * scontrol, the shim's status line, user job ids), and split at the first
 * '|' into a state name and an ExitCode for gdn_slurm_state. Every
 * result must be consistent: NUL-terminated, final only for final states.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gdn_job_status *st)
{
	if (memchr(st->native, '\0', sizeof(st->native)) == NULL ||
	    memchr(st->message, '\0', sizeof(st->message)) == NULL)
		BUG("status strings are not terminated");
	if (st->final != (st->state == GDN_JOB_SUCCEEDED || st->state == GDN_JOB_FAILED ||
			  st->state == GDN_JOB_STOPPED || st->state == GDN_JOB_TIMEOUT))
		BUG("final flag disagrees with the state");
	if (st->exit_code < -1 || st->exit_code > 255)
		BUG("exit code %d out of range", st->exit_code);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *out =
	    (const char *)data; /* not NUL-terminated: reading past size is an error */
	char *text = xstrndup(out, size);
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_slurm_job job;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf path = SBUF_INIT;
	const char *bar;
	size_t off = 0;

	if (!gdn_slurm_parse_sbatch(out, size, &job, &err)) {
		struct sbuf id = SBUF_INIT;
		struct gdn_slurm_job again;

		if (memchr(data, '\0', size) || !job.id[0])
			BUG("a job id read from output with a NUL byte, or an empty one");

		gdn_slurm_format_job_id(&job, &id);
		if (gdn_slurm_parse_job_id(id.buf, &again, &err) || strcmp(again.id, job.id) ||
		    strcmp(again.cluster, job.cluster))
			BUG("a job id sbatch printed does not read back: '%s'", id.buf);
		sbuf_release(&id);
	}
	gdn_slurm_parse_job_id(text, &job, &err);
	if (gdn_slurm_parse_squeue(out, size, &st, &err) == 1)
		check(&st);
	if (gdn_slurm_parse_sacct(out, size, "12", &st))
		check(&st);
	if (gdn_slurm_parse_scontrol(out, size, &st, &path)) {
		check(&st);
		if (memchr(data, '\0', size) || memchr(path.buf, '\0', path.len))
			BUG("scontrol output with a NUL byte was read");
	}
	bar = memchr(data, '|', size);
	if (gdn_slurm_state((const char *)data, bar ? (size_t)(bar - (const char *)data) : size,
			    bar ? bar + 1 : NULL,
			    bar ? size - (size_t)(bar + 1 - (const char *)data) : 0, &st))
		check(&st);
	if (!gdn_job_parse_shim((const char *)data, size, &st, &off, &err)) {
		check(&st);
		if (off > size)
			BUG("data offset past the end");
	}
	gdn_check_host(text, "host", GDN_EUSAGE, &err);
	gdn_check_user(text, "user", GDN_EUSAGE, &err);
	gdn_check_job_id(text, GDN_EUSAGE, &err);
	sbuf_release(&path);
	free(text);
	return 0;
}
