#define _GNU_SOURCE
#include "drop_privileges.h"

#include <grp.h>
#include <unistd.h>

int parastack_drop_to_user(uid_t uid, gid_t gid, const gid_t* groups, int group_count) {
  if (group_count < 0 || (group_count > 0 && !groups)) return -1;
  if (setgroups((size_t)group_count, groups) != 0) return -1;
  if (setresgid(gid, gid, gid) != 0) return -1;
  if (setresuid(uid, uid, uid) != 0) return -1;
  uid_t real, effective, saved;
  gid_t real_group, effective_group, saved_group;
  if (getresuid(&real, &effective, &saved) != 0 || real != uid || effective != uid || saved != uid) return -1;
  if (getresgid(&real_group, &effective_group, &saved_group) != 0 || real_group != gid || effective_group != gid ||
      saved_group != gid) {
    return -1;
  }
  if (uid != 0 && setuid(0) == 0) return -1; /* root regained: the drop did not hold */
  return 0;
}
