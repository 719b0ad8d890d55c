// The few things the watchdog asks of the batch system (Slurm, PBS), the mail system and the site's
// log for a batch job, through their command-line interfaces as the job's user (scontrol, scancel,
// qdel, sendmail) and syslog(3): no library, no root.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace parastack::os {

// Where a job's notices go: its --mail-user if it set one, else its owner's user name (local
// delivery). Empty if neither can be found.
std::string slurm_mail_recipient(const std::string& job_id);

// Sets the job's Comment so that `scontrol show job` and sacct say why it ended. Best effort:
// false (with Slurm's message in `problem`) if the site does not allow it.
bool slurm_set_comment(const std::string& job_id, const std::string& comment, std::string& problem);

// scancel JOB: every step and the batch script end; this process too, if it is one of the job's.
bool slurm_cancel(const std::string& job_id);

// Mails `body` to `to` through `mailer` (a sendmail-compatible program that reads the message,
// headers first, on stdin: `MAILER -t -oi -odi`; empty: Debian's /usr/sbin/sendmail). Nothing, or why
// the mail could not be sent ("/usr/sbin/sendmail exited with status 75").
std::string send_mail(const std::string& mailer, const std::string& to, const std::string& subject,
                      const std::string& body);

// qdel JOB (Torque, PBS, or Slurm's PBS front end): the job ends, this process too if it is the job's.
bool pbs_delete(const std::string& job_id);

// Waits, at most `limit`, until whoever reads `fd` has taken what was written to it, when `fd` is a
// pipe or a socket: a monitor's stderr under mpirun (pbs_parastack) or srun (the SPANK plugin),
// which forward it to the job's stderr. scancel and qdel end that reader with the job, and on a
// busy node it may not have read the last lines yet (the one saying the job is being deleted was
// lost so: CI, 2026-12-06). True when nothing is left unread, or `fd` is anything else (a file, a
// terminal); false when the limit passed first.
bool await_output_taken(int fd, std::chrono::milliseconds limit);

// The name of the user this process runs as (local delivery of mail), or empty.
std::string user_name();

// One line in the site's log (syslog, facility user, as "parastack"): what an admin greps for.
void site_log(const std::string& line);

}  // namespace parastack::os
