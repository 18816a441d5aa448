/*
 * W&B artifacts, src/hub/wandb_artifact.c: a run's logged artifacts of a
 * type (jax_profile for profiles), an artifact by name, and its files
 * (the paginated files connection for name and directUrl, the manifest
 * for each file's md5 digest and size), ready for hf.h's download engine.
 */
#ifndef GDNCTL_WANDB_ARTIFACT_H
#define GDNCTL_WANDB_ARTIFACT_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/hf.h"
#include "gdnctl/json.h"
#include "gdnctl/strvec.h"
#include "gdnctl/wandb.h"

#define GDN_WANDB_PROFILE_TYPE "jax_profile"

struct gdn_wandb_artifact {
	char *id;	    /* the GraphQL ID */
	char *name;	    /* the sequence name ("run-3xk2q1ab-profiler") */
	char *version;	    /* "v3" (from versionIndex), or NULL */
	char *type;	    /* artifactType.name */
	char *updated_at;   /* ISO 8601 as the server wrote it, or NULL */
	char *manifest_url; /* currentManifest.file.directUrl, or NULL */
	struct strvec aliases;
};
void gdn_wandb_artifact_release(struct gdn_wandb_artifact *a);

/*
 * Pure (fuzzed): among artifact nodes (a JSON array), those of `type`
 * (NULL: any); the one with `alias` (NULL: "latest"), else the most
 * recently updated. Returns 1 with *out filled, 0 when none has the type,
 * or a negative code for a malformed node.
 */
int gdn_wandb_pick_artifact(const json_t *nodes, const char *type, const char *alias,
			    struct gdn_wandb_artifact *out, struct gdn_err *err);

/*
 * Pure (fuzzed): a manifest ({"contents": {PATH: {"digest": base64 md5,
 * "size": N}}}) into files with path, size and md5. All or nothing.
 */
int gdn_wandb_parse_manifest(const char *json, size_t len, struct gdn_hf_files *out,
			     struct gdn_err *err);

/*
 * Pure (fuzzed): "ENTITY/PROJECT/NAME:ALIAS" (the alias may be omitted:
 * NULL) into new strings. GDN_EUSAGE otherwise.
 */
int gdn_wandb_parse_artifact_ref(const char *ref, char **entity, char **project, char **name,
				 char **alias, struct gdn_err *err);

/* The run's output artifact of `type`, chosen as gdn_wandb_pick_artifact says. */
int gdn_wandb_run_artifact(struct gdn_wandb *c, const char *entity, const char *project,
			   const char *run, const char *type, const char *alias,
			   struct gdn_wandb_artifact *out, struct gdn_err *err);
/* An artifact by "NAME:ALIAS" in a project. GDN_ENOTFOUND when there is none. */
int gdn_wandb_artifact_by_name(struct gdn_wandb *c, const char *entity, const char *project,
			       const char *name_alias, struct gdn_wandb_artifact *out,
			       struct gdn_err *err);
/*
 * The artifact's files: name and directUrl from its files connection
 * (every page), size and md5 from the manifest. A URL on another host
 * than the API (a signed URL) is marked no_auth: the key never goes there.
 */
int gdn_wandb_artifact_files(struct gdn_wandb *c, const struct gdn_wandb_artifact *a,
			     struct gdn_hf_files *out, struct gdn_err *err);

#endif
