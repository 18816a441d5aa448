/*
 * The Google Cloud Storage client, src/hub/gcs.c: the JSON API's object
 * listing (nextPageToken pages) and media downloads (over hf.h's
 * download engine: .part, Range resume, md5Hash verification).
 */
#ifndef GDNCTL_GCS_H
#define GDNCTL_GCS_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/hf.h"
#include "gdnctl/http.h"
#include "gdnctl/sbuf.h"

#define GDN_GCS_DEFAULT_ENDPOINT "https://storage.googleapis.com"

/*
 * "gs://BUCKET[/PREFIX]" into its parts (new strings; *prefix may be
 * empty). GDN_EUSAGE with a message for anything else.
 */
int gdn_gcs_parse_uri(const char *uri, char **bucket, char **prefix, struct gdn_err *err);

/*
 * Parse one listing page ({"items": [{"name", "size" (a decimal string),
 * "md5Hash" (base64)}], "nextPageToken"}) and append its objects, each
 * with its media URL under `endpoint` (NULL: no URL). Names ending in '/'
 * (folder placeholders) are counted in out->ignored. *next_token is a
 * new string or NULL on the last page. All or nothing.
 */
int gdn_gcs_parse_list(const char *json, size_t len, const char *endpoint, const char *bucket,
		       struct gdn_hf_files *out, char **next_token, struct gdn_err *err);

/* .../storage/v1/b/BUCKET/o?prefix=P[&pageToken=T] and .../download/storage/v1/b/B/o/NAME?alt=media
 */
void gdn_gcs_list_url(struct sbuf *out, const char *endpoint, const char *bucket,
		      const char *prefix, const char *page_token);
void gdn_gcs_media_url(struct sbuf *out, const char *endpoint, const char *bucket,
		       const char *name);

/*
 * The endpoint: STORAGE_EMULATOR_HOST (a URL, or host:port for http) when
 * set, else https://storage.googleapis.com. A new string, no trailing '/'.
 */
char *gdn_gcs_endpoint(void);

/*
 * The access token: GOOGLE_OAUTH_ACCESS_TOKEN, else the output of
 * `gcloud auth print-access-token` (GDNCTL_GCLOUD names the program),
 * run through the proc API within timeout_ms; its output summarised on
 * failure. With an emulator endpoint and no gcloud program, anonymous
 * (*token NULL). *source names where the token came from, never its value.
 */
int gdn_gcs_find_token(bool emulator, int timeout_ms, char **token, char **source,
		       struct gdn_err *err);

/*
 * List every object under gs://bucket/prefix. 401, 403 and 404 are one
 * clear line each (GDN_EFAILED, GDN_EFAILED, GDN_ENOTFOUND).
 */
int gdn_gcs_list(struct gdn_hf *client, const char *bucket, const char *prefix,
		 struct gdn_hf_files *out, struct gdn_err *err);

#endif
