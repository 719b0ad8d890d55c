#include "os/batch_system.h"

#include <linux/sockios.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "os/run_program.h"

namespace parastack::os {
namespace {

using namespace std::chrono_literals;

// Debian puts sendmail in /usr/sbin, which is not on a user's PATH.
std::string sendmail_program() {
  for (const char* path : {"/usr/sbin/sendmail", "/usr/lib/sendmail"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "sendmail";
}

std::string field(const std::string& record, const std::string& name) {
  // "scontrol show job -o" prints one line of NAME=VALUE words.
  std::istringstream words(record);
  for (std::string word; words >> word;) {
    if (word.rfind(name + "=", 0) == 0) return word.substr(name.size() + 1);
  }
  return {};
}

}  // namespace

std::string slurm_mail_recipient(const std::string& job_id) {
  std::string record;
  if (run_program({"scontrol", "show", "job", "-o", job_id}, 30s, {}, &record) == 0) {
    const std::string mail_user = field(record, "MailUser");
    if (!mail_user.empty() && mail_user != "(null)") return mail_user;
  }
  return user_name();
}

std::string user_name() {
  if (const passwd* user = ::getpwuid(::getuid())) return user->pw_name;
  return {};
}

bool pbs_delete(const std::string& job_id) { return run_program({"qdel", job_id}, 60s) == 0; }

bool await_output_taken(int fd, std::chrono::milliseconds limit) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) return true;
  // A pipe's FIONREAD counts its unread bytes from either end; a socket's SIOCOUTQ those its peer
  // has not taken yet (a Unix socket's until the reader consumes them, a TCP one's until acknowledged).
  const unsigned long request = S_ISFIFO(st.st_mode) ? FIONREAD : SIOCOUTQ;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int unread = 0;
    if (::ioctl(fd, request, &unread) != 0 || unread <= 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(2ms);  // the reader's pace: no event tells the writer
  }
}

void site_log(const std::string& line) {
  ::openlog("parastack", LOG_PID, LOG_USER);
  ::syslog(LOG_WARNING, "%s", line.c_str());
  ::closelog();
}

bool slurm_set_comment(const std::string& job_id, const std::string& comment, std::string& problem) {
  const int status = run_program({"scontrol", "update", "JobId=" + job_id, "Comment=" + comment}, 30s);
  if (status != 0) problem = "scontrol update exited with status " + std::to_string(status);
  return status == 0;
}

bool slurm_cancel(const std::string& job_id) { return run_program({"scancel", job_id}, 60s) == 0; }

std::string send_mail(const std::string& mailer, const std::string& to, const std::string& subject,
                      const std::string& body) {
  const std::string message =
      "To: " + to + "\nSubject: " + subject + "\nContent-Type: text/plain; charset=utf-8\n\n" + body;
  const std::string program = mailer.empty() ? sendmail_program() : mailer;
  // -odi: delivered before it returns (cron runs sendmail so too: every MTA takes it). In the
  // background (exim's default), delivery is a child in the job's cgroup, which the scancel or
  // qdel that follows kills: with no queue runner the mail then stays queued for ever (3 test
  // mails on 2026-11-29, one of them a CI failure).
  switch (const int status = run_program({program, "-t", "-oi", "-odi"}, 60s, message)) {
    case 0:
      return {};
    case -1:
      return program + " could not be run";
    case -2:
      return program + " did not finish within 60 s";
    case 127:
      return program + " could not be run (exit status 127: not found?)";
    default:
      return program + " exited with status " + std::to_string(status);
  }
}

}  // namespace parastack::os
