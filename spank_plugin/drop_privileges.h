/* The one way this plugin leaves root: in a child of slurmstepd, before it signals anything. */
#pragma once

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Becomes user `uid` for good: supplementary groups `groups` (root's are dropped), then group
 * `gid`, then the uid (in that order: once the uid is the user's, groups can no longer change),
 * each step checked, and checks that root cannot be regained. Only system calls, so it is safe in
 * a child forked from a threaded process. 0, or -1 if any step failed: the caller then does
 * nothing and exits. */
int parastack_drop_to_user(uid_t uid, gid_t gid, const gid_t* groups, int group_count);

#ifdef __cplusplus
}
#endif
