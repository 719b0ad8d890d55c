/* The plugin's parsing (options.h): moved out of parastack_spank.c unchanged. */
#include "options.h"

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
