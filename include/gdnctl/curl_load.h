#ifndef GDNCTL_CURL_LOAD_H
#define GDNCTL_CURL_LOAD_H

/*
 * libcurl is loaded at the first request (src/hub/curl_load.c): gdnctl
 * starts without it. gdn_curl_load() loads it once, and says why it could
 * not (GDN_EIO) on every later call too.
 */
struct gdn_err;
int gdn_curl_load(struct gdn_err *err);

#endif
