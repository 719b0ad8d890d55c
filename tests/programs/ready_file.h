/* Test programs announce that they are about to enter the state a test samples by writing
 * $PS_READY_DIR/NAME containing their pid (written to a temporary name, then renamed, so a reader
 * never sees a half-written file). Without PS_READY_DIR they write nothing. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void write_ready_file(const char* name) {
  const char* dir = getenv("PS_READY_DIR");
  if (!dir || !*dir) return;
  char path[4096], temporary[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(temporary, sizeof temporary, "%s.tmp.%d", path, (int)getpid());
  FILE* f = fopen(temporary, "w");
  if (!f) return;
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  rename(temporary, path);
}
