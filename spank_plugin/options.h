/* What the plugin parses, apart from Slurm: the plugstack.conf arguments and the --parastack value.
 * Pure C (no Slurm call, no I/O), so the fuzzer (fuzz/spank_options_fuzzer.cc) compiles it as the
 * plugin does. The names are not exported from parastack.so (version.map). */
#ifndef PARASTACK_SPANK_OPTIONS_H
#define PARASTACK_SPANK_OPTIONS_H

#ifdef __cplusplus
extern "C" {
#endif

#define VALUE_MAX 1024

struct site {
  char monitor[VALUE_MAX];
  char srun[VALUE_MAX];
  char defaults[VALUE_MAX];
  char actions[VALUE_MAX];
  char mailer[VALUE_MAX]; /* a sendmail-compatible program, an absolute path; "": the monitor's default */
  int enable_all;
  int mail;
};

/* `from` into `to` (VALUE_MAX bytes): 0, or -1 (and `to` untouched) when it does not fit. */
int parastack_copy_value(char* to, const char* from);

/* The plugstack.conf arguments into `site` (defaults first): -1, or the index of the first bad
 * argument (unknown, a value of VALUE_MAX characters or more, actions= starting with '-', or a
 * mailer= that is not an absolute path). */
int parastack_parse_site(int ac, char** av, struct site* site);

/* The --parastack value as Slurm hands it to the option's callback: with no argument the batch step
 * sees "", srun steps may see "(null)" (or NULL); both mean "". */
const char* parastack_option_value(const char* optarg);

/* Appends the monitor's arguments that carry the site's and the user's choices to argv[argc...]
 * (at most 6); the new argc. */
int parastack_add_choices(const struct site* site, const char* user, const char** argv, int argc);

/* Whether the job's ranks get the MPI progress library (--parastack=mpi-progress=on): the last
 * mpi-progress=VALUE item of the site's defaults, then of the user's list, decides (on, yes, true
 * or 1; anything else is off), and the last mpi-progress-library=PATH names the library, which
 * must be an absolute path (`library`, VALUE_MAX bytes, keeps the installed one otherwise).
 * Returns 1 or 0. The monitor checks the lists at submission; this only reads them. */
int parastack_progress_choice(const char* defaults, const char* user, char* library);

/* LD_PRELOAD with `library` in front of `existing` (which may be ""), in `out` of `size` bytes:
 * 0, or -1 when it does not fit. A library already in `existing` is not added again. */
int parastack_preload_value(char* out, unsigned long size, const char* library, const char* existing);

/* The default report path, `directory`/parastack-`name`.json, in `out` of `size` bytes, with every %
 * of the directory written %%: the monitor expands %j and the like in --report, and a directory
 * whose name holds a % must stay itself. 0, or -1 when it does not fit. */
int parastack_default_report(char* out, unsigned long size, const char* directory, const char* name);

/* What salloc runs, from its /proc/self/cmdline (`size` bytes of NUL-terminated arguments). Every
 * srun step of the allocation is watched (an MPI launcher's daemons started with srun too); ranks
 * that an MPI launcher run by salloc itself starts on this host are in no step, and no monitor can
 * reach them. */
enum salloc_command {
  NOT_SALLOC,          /* argv[0] is not salloc (sbatch, srun) */
  SALLOC_SRUN,         /* salloc ... srun ...: a step */
  SALLOC_MPI_LAUNCHER, /* salloc ... mpirun ...: *launcher names it */
  SALLOC_OTHER         /* a shell, a script, no command: its own steps are watched, nothing else */
};
enum salloc_command parastack_salloc_command(const char* cmdline, long size, const char** launcher);

#ifdef __cplusplus
}
#endif

#endif
