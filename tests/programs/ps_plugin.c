/* A plugin ps_nompi loads, waits in, and closes (ps_nompi plugins): built twice, as
 * libps_plugin_a.so and libps_plugin_b.so, whose waiting functions are named wait_in_a and
 * wait_in_b. The two are the same size, so the second is mapped where the first was, as Open MPI's
 * components are mapped where closed ones were inside MPI_Init. */
#include <unistd.h>

#include "ready_file.h"

/* The plugin's own loop, a frame of its own between the runtime's usleep and plugin_wait. */
__attribute__((noinline)) static void WAIT_IN(const char* until) {
  while (!until || access(until, F_OK) != 0) usleep(1000);
}

/* Announces `ready` (a ready file), then waits until the file `until` exists (for ever if NULL). */
__attribute__((visibility("default"))) void plugin_wait(const char* ready, const char* until) {
  write_ready_file(ready);
  WAIT_IN(until);
}
