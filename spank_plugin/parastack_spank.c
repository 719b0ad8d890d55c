/* parastack's SPANK plugin: `sbatch --parastack[=OPTIONS]` watches a batch job for hangs.
 *
 * Thin on purpose (docs/admin-guide.md): the plugin only carries the option from the submission to
 * the job, and starts the monitors. Everything else, validating OPTIONS included, is done by
 * parastack-monitor, a program that runs and is tested outside Slurm:
 *   - at submission (sbatch, salloc, srun: local context), `--parastack=help` prints
 *     `parastack-monitor --list-options`, and any other value is checked with
 *     `parastack-monitor --check-options`, so a bad value is refused before the job is queued;
 *   - srun --parastack outside a watched batch job (from a login shell, in salloc, or in a batch
 *     script without the option): the step's task 0 starts `srun --overlap` with one monitor per
 *     node of the step, watching that step only (--slurm-job JOB.STEP); they end when task 0
 *     exits, and its task_exit waits for them as for the batch script.
 *   - in the job's batch step (slurmstepd, remote context), slurm_spank_task_init runs in the batch
 *     task, already as the job's user and inside the step's cgroup. It starts, detached from the
 *     batch script, `srun --overlap` with one parastack-monitor per node, and tells the leading
 *     monitor the script's pid and start time: the monitors end when the script exits. That step
 *     lives at most as long as the batch step, which ends it: a monitor never outlives the job.
 *   - when the batch script ends, slurm_spank_task_exit (in slurmstepd) waits a moment for that
 *     srun (for parastack-srun, its parent, whose pid task_init recorded: it says in the job's
 *     stderr when the monitors fail), so that it ends quietly before the batch step does. It
 *     signals nothing and looks for nothing: no scan of other processes.
 *
 * plugstack.conf arguments (site settings; see docs/admin-guide.md):
 *   monitor=PATH      parastack-monitor (default: the installed one)
 *   srun=PATH         srun (default: srun on the job's PATH)
 *   enable=all        watch every batch job unless it says --parastack=off (default: opt-in)
 *   defaults=OPTIONS  site defaults, same syntax as --parastack=OPTIONS; the user's win
 *   actions=LIST      the actions users may choose, e.g. actions=kill (default: kill,report,stop)
 *   mail=no           do not mail reports (default: mail the job's --mail-user, else its owner)
 *   mailer=PATH       the sendmail-compatible program to mail with (default /usr/sbin/sendmail)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <slurm/spank.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drop_privileges.h"
#include "options.h"

SPANK_PLUGIN(parastack, 1);

/* The option's value as the callback saw it (it may fire more than once: the last one counts). */
static int option_given = 0;
static char option_value[VALUE_MAX] = "";

/* What task_init records for task_exit: the monitors' srun (its parent, parastack-srun). task_init
 * runs in the batch task, a child of slurmstepd, and task_exit in slurmstepd itself, so they share
 * no variable: this page, mapped shared in slurm_spank_init (in slurmstepd, before it forks the
 * task), is the one memory both see. No file, nothing another process could plant. */
struct started_monitors {
  pid_t srun;
  unsigned long long srun_start_ticks; /* with the pid, the process (a pid can be reused) */
  int for_step;                        /* started by task 0 of a step: wait at that task's exit */
};
static struct started_monitors* started = NULL;

/* The whole (small) /proc file at `path`, NUL-terminated, in `buffer`: its length, or -1. */
static ssize_t read_proc_file(const char* path, char* buffer, size_t size) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  const ssize_t n = read(fd, buffer, size - 1);
  close(fd);
  if (n <= 0) return -1;
  buffer[n] = '\0';
  return n;
}

/* Start time of process `pid` in clock ticks since boot (/proc/PID/stat field 22), or 0. */
static unsigned long long start_ticks(pid_t pid) {
  char path[64], stat[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (read_proc_file(path, stat, sizeof stat) < 0) return 0;
  const char* at = strrchr(stat, ')'); /* the command name may hold spaces and parentheses */
  if (!at) return 0;
  for (int field = 2; field < 22 && at; ++field) at = strchr(at + 1, ' ');
  return at ? strtoull(at + 1, NULL, 10) : 0;
}

static int parse_site(int ac, char** av, struct site* site) {
  const int bad = parastack_parse_site(ac, av, site);
  if (bad >= 0) {
    slurm_error("parastack: plugstack.conf: bad argument '%s' (see docs/admin-guide.md)", av[bad]);
    return -1;
  }
  return 0;
}

/* Runs the monitor at submission and waits: its exit status, or -1. Its output is the user's. */
static int run_monitor_here(const char* const* argv) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execv(argv[0], (char* const*)argv);
    fprintf(stderr, "parastack: cannot run %s: %s (is parastack installed on this host?)\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* salloc --parastack: the option reaches every step of the allocation, so what srun starts is
 * watched, mpirun's daemons too when it starts them with srun (on the allocation's nodes other
 * than this host). Ranks an MPI launcher starts on this host itself are in no step, where no
 * monitor can reach them: whether this host is one of the allocation's nodes is not known before
 * the allocation, so say so once, and how to be sure, rather than refuse. */
static int check_salloc_command(void) {
  char arguments[8192];
  const ssize_t n = read_proc_file("/proc/self/cmdline", arguments, sizeof arguments);
  const char* launcher = NULL;
  switch (n < 0 ? NOT_SALLOC : parastack_salloc_command(arguments, n, &launcher)) {
    case SALLOC_MPI_LAUNCHER:
      slurm_info(
          "parastack: the ranks %s starts through srun are watched; any it starts on this host itself are in no "
          "step and are not (to be sure: `salloc ... srun --mpi=pmix ...`, or `parastack run -- %s ...`)",
          launcher, launcher);
      return 0;
    case SALLOC_OTHER:
      slurm_info(
          "parastack: the steps srun starts in this allocation are watched; ranks that mpirun starts "
          "here are not (use `parastack run -- mpirun ...` for those)");
      return 0;
    default:
      return 0;
  }
}

/* srun --parastack under `parastack run`, which names itself to its command in
 * PARASTACK_RUN_WATCHER=PID:START: both watch the step's tasks. Said, not refused: each watches
 * correctly (docs/user-guide.md, "A job watched twice"), as parastack run says in the other case. */
static void say_if_under_parastack_run(void) {
  const char* watcher = getenv("PARASTACK_RUN_WATCHER");
  int pid = 0;
  unsigned long long ticks = 0;
  if (!watcher || sscanf(watcher, "%d:%llu", &pid, &ticks) != 2 || pid <= 0) return;
  if (start_ticks(pid) != ticks) return; /* the variable outlived that parastack run */
  slurm_info(
      "parastack: this srun runs under parastack run (pid %d), which watches its tasks too: two watchers both "
      "sample them and both act on a hang; one is enough (docs/user-guide.md, \"A job watched twice\")",
      pid);
}

static struct site submit_site;
static int submit_site_ok = 0;

static int option_callback(int val, const char* argument, int remote) {
  (void)val;
  const char* value = parastack_option_value(argument);
  if (parastack_copy_value(option_value, value) != 0) {
    slurm_error("parastack: --parastack value longer than %d characters", VALUE_MAX - 1);
    return -1;
  }
  option_given = 1;
  if (remote) return 0;
  if (!submit_site_ok) {
    slurm_error("parastack: the cluster's parastack set-up (plugstack.conf) is wrong; this job runs unwatched");
    return 0;
  }
  if (strcmp(value, "help") == 0) {
    const char* argv[] = {submit_site.monitor, "--list-options", NULL};
    exit(run_monitor_here(argv) == 0 ? 0 : 1);
  }
  if (strcmp(value, "off") == 0) return 0;
  const char* argv[16] = {submit_site.monitor, "--check-options"};
  const int argc = parastack_add_choices(&submit_site, value, argv, 2);
  argv[argc] = NULL;
  if (run_monitor_here(argv) != 0) {
    slurm_error("parastack: --parastack=%s refused (--parastack=help lists the options)", value);
    return -1;
  }
  if (spank_context() == S_CTX_LOCAL) say_if_under_parastack_run();
  return spank_context() == S_CTX_ALLOCATOR ? check_salloc_command() : 0;
}

static struct spank_option parastack_option = {
    "parastack",
    "[OPTIONS]",
    "Watch the job for hangs (parastack). OPTIONS: comma-separated name=value, e.g. "
    "action=report,alpha=0.001; --parastack=help lists them; --parastack=off opts out.",
    2,
    0,
    option_callback};

/* sbatch reads its script before it hands plugin options over, so `sbatch --parastack=help` alone
 * would stop at "Batch script is empty": answer it from the command line, before that. */
static int help_on_command_line(void) {
  char arguments[8192];
  const ssize_t n = read_proc_file("/proc/self/cmdline", arguments, sizeof arguments);
  if (n < 0) return 0;
  for (ssize_t at = 0; at < n; at += (ssize_t)strlen(arguments + at) + 1) {
    if (strcmp(arguments + at, "--parastack=help") == 0) return 1;
  }
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  const spank_context_t context = spank_context();
  /* A wrong plugstack.conf argument (parse_site has said which) must not stop anybody's sbatch or
   * srun: the option stays registered, and a job that asks for it is told it runs unwatched. */
  if (context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR) submit_site_ok = parse_site(ac, av, &submit_site) == 0;
  if (context == S_CTX_ALLOCATOR && submit_site_ok && help_on_command_line()) {
    const char* argv[] = {submit_site.monitor, "--list-options", NULL};
    exit(run_monitor_here(argv) == 0 ? 0 : 1);
  }
  if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR && context != S_CTX_REMOTE) return 0;
  if (context == S_CTX_REMOTE) {
    void* page = mmap(NULL, sizeof *started, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    started = page == MAP_FAILED ? NULL : page; /* without it, the step's end ends the monitors */
  }
  if (spank_option_register(sp, &parastack_option) != ESPANK_SUCCESS) {
    slurm_error("parastack: cannot register --parastack; jobs are not watched");
  }
  return 0; /* never fail a submission or a job for the watchdog's sake */
}

/* A NAME=VALUE entry of the job's environment, or NULL. */
static const char* job_env(char** env, const char* name) {
  const size_t n = strlen(name);
  for (; env && *env; ++env) {
    if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') return *env + n + 1;
  }
  return NULL;
}

/* Runs the monitors' srun as its child and waits for it. When that srun ends with a failure (a
 * monitor crashed or was killed), srun and slurmstepd have just written, into the job's own stderr,
 * that a task failed or that a step was CANCELLED: one line says whose step that was, and that the
 * job runs on. Quiet when the monitors end well (the job's end, a hang reported: status 0) and when
 * they are ended with the job (scancel, the step's end: this process goes with them). It is a fork
 * of the task, its environment (rank variables included) with it: named parastack-srun, it is never
 * taken for a rank (the monitors skip parastack*). The job's own signals (scancel --signal, sbatch
 * --signal) are not its business: srun forwards them to the monitors. */
static void supervise_monitors_srun(const char* const* argv) {
  prctl(PR_SET_NAME, "parastack-srun", 0, 0, 0);
  signal(SIGHUP, SIG_IGN);
  signal(SIGUSR1, SIG_IGN);
  signal(SIGUSR2, SIG_IGN);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  const pid_t srun = fork();
  if (srun < 0) {
    fprintf(stderr, "parastack: fork: %s; the job is not watched\n", strerror(errno));
    return;
  }
  if (srun == 0) {
    signal(SIGHUP, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    signal(SIGUSR2, SIG_DFL);
    execvp(argv[0], (char* const*)argv);
    fprintf(stderr, "parastack: cannot run %s: %s; the job is not watched\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(srun, &status, 0) < 0) {
    if (errno != EINTR) return;
  }
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 127)) return;
  char how[64];
  if (WIFSIGNALED(status)) {
    snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(status));
  } else {
    snprintf(how, sizeof how, "ended with status %d", WEXITSTATUS(status));
  }
  fprintf(stderr,
          "parastack: the watchdog's monitors have stopped (their srun %s); the job runs on, no longer watched. "
          "Lines just above from srun or slurmstepd about a failed task or a CANCELLED step are about the "
          "monitors' own step, not the job's\n",
          how);
}

/* Starts the monitors' srun under supervise_monitors_srun, detached twice so that the task never
 * has either as its child (a `wait` in a batch script must not wait for them); they stay in the
 * step's cgroup, so the end of the step ends them. `record`: remember the supervisor for task_exit,
 * which waits for it (the batch step; a step's task 0, `for_step`). */
static void start_monitors(const char* const* argv, char** env, int record, int for_step) {
  const pid_t child = fork();
  if (child < 0) {
    slurm_error("parastack: fork: %m; the job is not watched");
    return;
  }
  if (child == 0) {
    const pid_t srun = fork();
    if (srun != 0) {
      if (srun > 0 && record && started) {
        started->srun_start_ticks = start_ticks(srun);
        started->for_step = for_step;
        started->srun = srun;
      }
      _exit(0);
    }
    setsid();
    /* Nothing on stdout: the monitors write none, and a step's stdout is a pipe its end waits on. */
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, STDIN_FILENO);
    if (null >= 0 && for_step) dup2(null, STDOUT_FILENO);
    for (int fd = 3; fd < 1024; ++fd) close(fd); /* slurmstepd's descriptors are not ours */
    extern char** environ;
    environ = env; /* the job's environment (PATH, SLURM_*), not slurmstepd's */
    /* The monitors' own step must not start monitors for itself (it inherits the option). */
    setenv("PARASTACK_MONITOR_STEP", "1", 1);
    supervise_monitors_srun(argv);
    _exit(0);
  }
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* The monitors' options that come from the site and the user (after the job's own). */
static int add_site_and_user(const struct site* site, const char** argv, int argc) {
  if (site->mail) argv[argc++] = "--mail";
  if (site->mail && site->mailer[0]) {
    argv[argc++] = "--mailer";
    argv[argc++] = site->mailer;
  }
  return parastack_add_choices(site, option_value, argv, argc);
}

/* The srun that starts one monitor per node (`nodes` of them) into argv, after the options in
 * `placement` (NULL-terminated, at most 4; NULL: the job's own nodes). The monitors watch `job`
 * (JOB or JOB.STEP), end with the process `script` (PID:START), log only errors, and exit 0 after
 * a hang. Returns argc (at most 30); the caller appends and NULL-terminates.
 * --kill-on-bad-exit=1: a monitor that dies (a crash, kill -9) takes the other monitors with it;
 * they would otherwise wait for it, idle but present, until the job's end. Only this step. */
static int monitors_srun(const struct site* site, const char* const* placement, const char* nodes, const char* job,
                         const char* report, const char* script, const char** argv) {
  int argc = 0;
  const char* const head[] = {
      site->srun, "--overlap", "--quiet", "--job-name=parastack", "--mpi=pmix", "--kill-on-bad-exit=1", "--input=none"};
  for (size_t i = 0; i < sizeof head / sizeof *head; ++i) argv[argc++] = head[i];
  for (int i = 0; placement && placement[i] && i < 4; ++i) argv[argc++] = placement[i];
  const char* const tail[] = {"--nodes",
                              nodes,
                              "--ntasks",
                              nodes,
                              "--ntasks-per-node=1",
                              "--cpus-per-task=1",
                              site->monitor,
                              "--slurm-job",
                              job,
                              "--report",
                              report,
                              "--log-level",
                              "error",
                              "--batch-script",
                              script,
                              "--hang-exit-status",
                              "0"};
  for (size_t i = 0; i < sizeof tail / sizeof *tail; ++i) argv[argc++] = tail[i];
  return argc;
}

/* srun --parastack outside a watched batch job (from a login shell, inside salloc, or in a batch
 * script without the option): the step's first task starts one monitor per node of the step,
 * watching that step only (--slurm-job JOB.STEP); they end when its task 0 does. */
static void watch_step(const struct site* site, uint32_t job_id, uint32_t step_id, char** env) {
  if (job_env(env, "PARASTACK_MONITOR_STEP")) return; /* the monitors' own step */
  const char* watched = job_env(env, "PARASTACK_WATCHED_JOB");
  char job[32], step[48], report[2 * VALUE_MAX + 64], cwd[VALUE_MAX], task[64];
  snprintf(job, sizeof job, "%u", job_id);
  /* This process becomes the step's task 0: the monitors end when it exits, and its task_exit
   * waits for them, so that nothing of theirs is left in the step's cgroup when the step ends
   * (slurmstepd would kill it and wait a whole second for it). */
  snprintf(task, sizeof task, "%d:%llu", (int)getpid(), start_ticks(getpid()));
  if (watched && strcmp(watched, job) == 0) return; /* the batch step's monitors watch every step */
  const char* nodes = job_env(env, "SLURM_STEP_NUM_NODES");
  const char* nodelist = job_env(env, "SLURM_STEP_NODELIST");
  if (!nodes || atoi(nodes) < 1 || !nodelist) {
    slurm_error("parastack: the step's nodes are not in its environment; this step is not watched");
    return;
  }
  snprintf(step, sizeof step, "%u.%u", job_id, step_id);
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, ".");
  parastack_default_report(report, sizeof report, cwd, step); /* fits: twice cwd's size and more */
  const char* placement[] = {"--jobid", job, "--nodelist", nodelist, NULL};
  const char* argv[48];
  int argc = monitors_srun(site, placement, nodes, step, report, task, argv);
  argv[argc++] = "--linger"; /* a step runs one program: monitoring ends soon after it */
  argv[argc++] = "2";
  argc = add_site_and_user(site, argv, argc);
  argv[argc] = NULL;
  start_monitors(argv, env, 1, 1);
}

/* --parastack=mpi-progress=on: every task of the job's steps (the batch script, whose mpirun hands
 * its environment to the ranks it starts, and srun's tasks) gets the progress library in front of
 * its LD_PRELOAD. Runs in the task, as the job's user, just before its execve; a library that
 * cannot be read is said once and left out: the job runs as it would without it. */
static void preload_progress_library(spank_t sp, const struct site* site, char** env, uint32_t task) {
  char library[VALUE_MAX];
  if (!parastack_progress_choice(site->defaults, option_value, library)) return;
  if (job_env(env, "PARASTACK_MONITOR_STEP")) return; /* the monitors read the pages; they keep none */
  if (access(library, R_OK) != 0) {
    if (task == 0) slurm_error("parastack: mpi-progress: cannot read %s (%m); the job runs without it", library);
    return;
  }
  char existing[VALUE_MAX] = "", value[2 * VALUE_MAX + 2];
  if (spank_getenv(sp, "LD_PRELOAD", existing, sizeof existing) != ESPANK_SUCCESS) existing[0] = '\0';
  if (parastack_preload_value(value, sizeof value, library, existing) != 0) {
    if (task == 0) slurm_error("parastack: mpi-progress: LD_PRELOAD is too long; the job runs without the library");
    return;
  }
  spank_setenv(sp, "LD_PRELOAD", value, 1);
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  if (spank_context() != S_CTX_REMOTE) return 0;
  struct site site;
  if (parse_site(ac, av, &site) != 0) return 0; /* never fail a job for the watchdog's sake */
  const int wanted = option_given ? strcmp(option_value, "off") != 0 : site.enable_all;
  if (!wanted) return 0;

  uint32_t job_id = 0, step_id = 0;
  char** env = NULL;
  if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) {
    slurm_error("parastack: cannot read the job's id, step or environment; the job is not watched");
    return 0;
  }
  if (step_id != SLURM_BATCH_SCRIPT) {
    uint32_t task = 1;
    const int have_task = spank_get_item(sp, S_TASK_GLOBAL_ID, &task) == ESPANK_SUCCESS;
    /* One start per step (its task 0), for ordinary steps (not the extern or interactive step). */
    if (step_id < SLURM_MAX_NORMAL_STEP_ID && have_task && task == 0) watch_step(&site, job_id, step_id, env);
    /* After the monitors are started: they are MPI programs and must not get the library. */
    if (step_id < SLURM_MAX_NORMAL_STEP_ID) preload_progress_library(sp, &site, env, have_task ? task : 1);
    return 0;
  }

  /* S_JOB_NNODES reads 0 in the batch step: the environment knows. */
  const char* nodes = job_env(env, "SLURM_JOB_NUM_NODES");
  if (!nodes) nodes = job_env(env, "SLURM_NNODES");
  if (!nodes || atoi(nodes) < 1) nodes = "1";
  char job[32], report[2 * VALUE_MAX + 64], cwd[VALUE_MAX], script[64];
  snprintf(job, sizeof job, "%u", job_id);
  /* This process becomes the batch script (task_init runs just before its execve). */
  snprintf(script, sizeof script, "%d:%llu", (int)getpid(), start_ticks(getpid()));
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, ".");
  parastack_default_report(report, sizeof report, cwd, job); /* fits: twice cwd's size and more */

  const char* argv[48];
  int argc = monitors_srun(&site, NULL, nodes, job, report, script, argv);
  argc = add_site_and_user(&site, argv, argc);
  argv[argc] = NULL;
  /* The monitors' messages go to the job's stderr: only errors (a hang, where its report is), so
   * that a healthy job's output is what it would be without parastack; and they exit 0 after a
   * hang, or their srun would add "task 0: Exited with exit code 3" to that one line. */
  start_monitors(argv, env, 1, 0);
  /* Every step of this job is watched by these monitors: srun --parastack steps start no others. */
  spank_setenv(sp, "PARASTACK_WATCHED_JOB", job, 1);
  preload_progress_library(sp, &site, env, 0);
  return 0;
}

/* Whether the recorded srun has ended: no such process, a zombie, or its pid now names another. */
static int srun_gone(const struct started_monitors* monitors) {
  char path[64], stat[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)monitors->srun);
  if (read_proc_file(path, stat, sizeof stat) < 0) return 1;
  const char* close_paren = strrchr(stat, ')');
  if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z') return 1;
  return start_ticks(monitors->srun) != monitors->srun_start_ticks;
}

/* The batch script has ended, and so has the leading monitor's reason to watch: it saw the script
 * exit (--batch-script) and releases the others, which exit 0, and their srun ends quietly. Wait
 * for that (at most 5 s) before Slurm ends the batch step: killed by the step's end instead, their
 * srun would print `task 0: Killed` into the job's output and keep the job COMPLETING for about
 * 3 s more. Runs in slurmstepd as root: the waiting is done by a child that has become the job's
 * user for good, so nothing the plugin does about the job's processes runs as root. */
int slurm_spank_task_exit(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE || !started || started->srun <= 0) return 0;
  uint32_t task = 0;
  if (started->for_step && (spank_get_item(sp, S_TASK_GLOBAL_ID, &task) != ESPANK_SUCCESS || task != 0)) return 0;
  const struct started_monitors monitors = *started;
  started->srun = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
    return 0;
  }
  /* The job's own groups, read before the fork (the child may only make system calls). */
  gid_t* groups = NULL;
  int group_count = 0;
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &group_count) != ESPANK_SUCCESS || group_count < 0) {
    groups = &gid;
    group_count = 1;
  }
  const pid_t child = fork();
  if (child == 0) {
    if (parastack_drop_to_user(uid, gid, groups, group_count) != 0) _exit(1);
    for (int tick = 0; tick < 100 && !srun_gone(&monitors); ++tick) {
      const struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
    _exit(0);
  }
  if (child < 0) return 0;
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
  }
  return 0;
}
