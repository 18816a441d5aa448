/*
 * Fuzz the journal reader that --resume trusts after a crash: any bytes
 * (torn lines, bad JSON, wrong types, huge numbers, events of other runs)
 * must be parsed or refused with an error, never crash or leak. The input
 * is also parsed in two halves to exercise a torn last line.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (gdn_journal_parse((const char *)data, size, &st, &err) && !err.msg[0])
		BUG("journal error without a message");
	gdn_loop_state_release(&st);
	gdn_journal_parse((const char *)data, size / 2, &st, &err);
	gdn_loop_state_release(&st);
	return 0;
}
