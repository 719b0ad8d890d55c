// The few things the watchdog asks of Slurm and of the mail system for a batch job, through their
// command-line interfaces as the job's user (scontrol, scancel, sendmail): no library, no root.
#pragma once

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

// Mails `body` through the system's sendmail interface (sendmail -t -oi). False if it failed.
// Mails `body` to `to` through `mailer` (a sendmail-compatible program that reads the message,
// headers first, on stdin: `MAILER -t -oi`; empty: Debian's /usr/sbin/sendmail). Nothing, or why
// the mail could not be sent ("/usr/sbin/sendmail exited with status 75").
std::string send_mail(const std::string& mailer, const std::string& to, const std::string& subject,
                      const std::string& body);

}  // namespace parastack::os
