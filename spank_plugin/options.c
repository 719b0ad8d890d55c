/* The plugin's parsing (options.h): moved out of parastack_spank.c unchanged. */
#include "options.h"

#include <stdio.h>
#include <string.h>

#ifndef PARASTACK_MONITOR_PATH
#define PARASTACK_MONITOR_PATH "/usr/local/bin/parastack-monitor"
#endif

int parastack_copy_value(char* to, const char* from) {
  const size_t n = strlen(from);
  if (n >= VALUE_MAX) return -1;
  memcpy(to, from, n + 1);
  return 0;
}

int parastack_parse_site(int ac, char** av, struct site* site) {
  memset(site, 0, sizeof *site);
  strcpy(site->monitor, PARASTACK_MONITOR_PATH);
  strcpy(site->srun, "srun");
  site->mail = 1;
  for (int i = 0; i < ac; ++i) {
    const char* arg = av[i];
    int bad = 0;
    if (strncmp(arg, "monitor=", 8) == 0) {
      bad = parastack_copy_value(site->monitor, arg + 8);
    } else if (strncmp(arg, "srun=", 5) == 0) {
      bad = parastack_copy_value(site->srun, arg + 5);
    } else if (strncmp(arg, "defaults=", 9) == 0) {
      bad = parastack_copy_value(site->defaults, arg + 9);
    } else if (strncmp(arg, "actions=", 8) == 0) {
      /* A list of action words. One starting with '-' would reach parastack-monitor as an option
       * of its own: "actions=--job-options=grace=1" overrode the user's choices. */
      bad = arg[8] == '-' || parastack_copy_value(site->actions, arg + 8);
    } else if (strcmp(arg, "enable=all") == 0) {
      site->enable_all = 1;
    } else if (strcmp(arg, "enable=opt-in") == 0) {
      site->enable_all = 0;
    } else if (strcmp(arg, "mail=no") == 0 || strcmp(arg, "mail=yes") == 0) {
      site->mail = arg[5] == 'y';
    } else if (strncmp(arg, "mailer=", 7) == 0) {
      /* Run by the monitors as the job's user, never looked up on the user's PATH. */
      bad = arg[7] != '/' || parastack_copy_value(site->mailer, arg + 7);
    } else {
      bad = 1;
    }
    if (bad) return i;
  }
  return -1;
}

#ifndef PARASTACK_PROGRESS_LIBRARY
#define PARASTACK_PROGRESS_LIBRARY "/usr/local/lib/parastack/libparastack-progress.so"
#endif

/* Items of a NAME=VALUE,... list: the last NAME=VALUE of each name wins. */
static void progress_items(const char* list, int* wanted, char* library) {
  for (const char* item = list; item && *item;) {
    const char* end = strchr(item, ',');
    const size_t n = end ? (size_t)(end - item) : strlen(item);
    static const char wanted_name[] = "mpi-progress=", library_name[] = "mpi-progress-library=";
    if (n >= sizeof wanted_name - 1 && strncmp(item, wanted_name, sizeof wanted_name - 1) == 0) {
      const char* value = item + sizeof wanted_name - 1;
      const size_t length = n - (sizeof wanted_name - 1);
      *wanted = 0;
      static const char* const yes[] = {"on", "yes", "true", "1"};
      for (size_t i = 0; i < sizeof yes / sizeof *yes; ++i) {
        if (length == strlen(yes[i]) && strncmp(value, yes[i], length) == 0) *wanted = 1;
      }
    } else if (n >= sizeof library_name - 1 && strncmp(item, library_name, sizeof library_name - 1) == 0) {
      const size_t length = n - (sizeof library_name - 1);
      const char* value = item + sizeof library_name - 1;
      if (length > 0 && length < VALUE_MAX && value[0] == '/') {
        memcpy(library, value, length);
        library[length] = '\0';
      }
    }
    item = end ? end + 1 : NULL;
  }
}

int parastack_progress_choice(const char* defaults, const char* user, char* library) {
  int wanted = 0;
  strcpy(library, PARASTACK_PROGRESS_LIBRARY);
  progress_items(defaults, &wanted, library);
  progress_items(user, &wanted, library);
  return wanted;
}

int parastack_preload_value(char* out, unsigned long size, const char* library, const char* existing) {
  /* Already there (the batch script's environment reaches its srun steps): as it is. */
  const size_t n = strlen(library);
  for (const char* at = existing; (at = strstr(at, library)) != NULL; at += n) {
    const int starts = at == existing || at[-1] == ':' || at[-1] == ' ';
    const int ends = at[n] == '\0' || at[n] == ':' || at[n] == ' ';
    if (starts && ends) {
      if (strlen(existing) + 1 > size) return -1;
      strcpy(out, existing);
      return 0;
    }
  }
  const size_t needed = n + (existing[0] ? 1 + strlen(existing) : 0) + 1;
  if (needed > size) return -1;
  strcpy(out, library);
  if (existing[0]) {
    strcat(out, ":");
    strcat(out, existing);
  }
  return 0;
}

int parastack_default_report(char* out, unsigned long size, const char* directory, const char* name) {
  size_t n = 0;
  for (const char* c = directory; *c; ++c) {
    if (n + 2 >= size) return -1;
    if (*c == '%') out[n++] = '%';
    out[n++] = *c;
  }
  out[n] = '\0';
  const int written = snprintf(out + n, size - n, "/parastack-%s.json", name);
  return written < 0 || (size_t)written >= size - n ? -1 : 0;
}

const char* parastack_option_value(const char* optarg) {
  return (optarg == NULL || strcmp(optarg, "(null)") == 0) ? "" : optarg;
}

int parastack_add_choices(const struct site* site, const char* user, const char** argv, int argc) {
  if (site->defaults[0]) {
    argv[argc++] = "--job-options";
    argv[argc++] = site->defaults;
  }
  if (user && user[0]) {
    argv[argc++] = "--job-options";
    argv[argc++] = user;
  }
  if (site->actions[0]) {
    argv[argc++] = "--allowed-actions";
    argv[argc++] = site->actions;
  }
  return argc;
}

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* mpirun, mpiexec, orterun and Debian's alternatives' targets (mpirun.openmpi, mpiexec.hydra...). */
static int is_mpi_launcher(const char* name) {
  static const char* const launchers[] = {"mpirun", "mpiexec", "orterun", "oshrun"};
  for (size_t i = 0; i < sizeof launchers / sizeof *launchers; ++i) {
    const size_t n = strlen(launchers[i]);
    if (strncmp(name, launchers[i], n) == 0 && (name[n] == '\0' || name[n] == '.')) return 1;
  }
  return 0;
}

enum salloc_command parastack_salloc_command(const char* cmdline, long size, const char** launcher) {
  *launcher = NULL;
  /* Only whole arguments: a last one without its NUL (a truncated read) is left out. */
  while (size > 0 && cmdline[size - 1] != '\0') --size;
  if (size <= 0 || strcmp(base_name(cmdline), "salloc") != 0) return NOT_SALLOC;
  for (long at = (long)strlen(cmdline) + 1; at < size; at += (long)strlen(cmdline + at) + 1) {
    const char* name = base_name(cmdline + at);
    if (strcmp(name, "srun") == 0) return SALLOC_SRUN;
    if (is_mpi_launcher(name)) {
      *launcher = cmdline + at;
      return SALLOC_MPI_LAUNCHER;
    }
  }
  return SALLOC_OTHER;
}
