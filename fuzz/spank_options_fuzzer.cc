// The SPANK plugin's parsing (spank_plugin/options.h, the C the plugin compiles): the plugstack.conf
// arguments a site writes and the --parastack value a user gives. Input: lines; the first is the
// --parastack value ("(null)" as srun may pass it), the others the plugstack.conf arguments. The
// site's settings are the last given (or the defaults), every string fits its buffer, a bad
// argument is named, and the arguments handed to parastack-monitor --check-options are the ones
// the plugin builds, which expand_job_options then takes with the user's list winning.
#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"
#include "cli/job_options.h"
#include "options.h"

namespace {

std::size_t bounded_length(const char* text) { return strnlen(text, VALUE_MAX); }

// What the site should be after `args`, computed the plain way.
struct Expected {
  std::string monitor = "/usr/local/bin/parastack-monitor", srun = "srun", defaults, actions, mailer;
  int enable_all = 0, mail = 1;
  int bad = -1;
};

Expected expected_site(const std::vector<std::string>& args) {
  Expected e;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string* field = nullptr;
    std::string value;
    for (auto [prefix, target] : {std::pair<const char*, std::string*>{"monitor=", &e.monitor},
                                  {"srun=", &e.srun},
                                  {"defaults=", &e.defaults},
                                  {"actions=", &e.actions},
                                  {"mailer=", &e.mailer}}) {
      if (a.starts_with(prefix)) {
        field = target;
        value = a.substr(std::strlen(prefix));
        break;
      }
    }
    if (field && value.size() < VALUE_MAX && !(field == &e.actions && value.starts_with("-")) &&
        !(field == &e.mailer && !value.starts_with("/"))) {
      *field = value;
    } else if (!field && (a == "enable=all" || a == "enable=opt-in")) {
      e.enable_all = a == "enable=all";
    } else if (!field && (a == "mail=no" || a == "mail=yes")) {
      e.mail = a == "mail=yes";
    } else {
      e.bad = static_cast<int>(i);
      return e;
    }
  }
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> lines;
  std::stringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string line; std::getline(in, line);) {
    // C strings: an argument ends at its first NUL, as Slurm hands it over.
    lines.push_back(line.substr(0, line.find('\0')));
  }
  {
    // The whole input as salloc's /proc/self/cmdline: a launcher found is a whole argument in it.
    const char* text = reinterpret_cast<const char*>(data);
    const char* launcher = nullptr;
    const auto kind = parastack_salloc_command(text, static_cast<long>(size), &launcher);
    FUZZ_REQUIRE((kind == SALLOC_MPI_LAUNCHER) == (launcher != nullptr));
    if (launcher) {
      FUZZ_REQUIRE(launcher > text && launcher < text + size && launcher[-1] == '\0');
      FUZZ_REQUIRE(std::memchr(launcher, '\0', static_cast<std::size_t>(text + size - launcher)) != nullptr);
    }
    if (kind != NOT_SALLOC) FUZZ_REQUIRE(size >= 7 && std::memchr(text, '\0', size) != nullptr);
  }
  if (lines.empty() || lines.size() > 32) return 0;
  const std::vector<std::string> args(lines.begin() + 1, lines.end());
  std::vector<char*> av;
  for (const auto& a : args) av.push_back(const_cast<char*>(a.c_str()));

  site s;
  const int bad = parastack_parse_site(static_cast<int>(av.size()), av.data(), &s);
  const Expected e = expected_site(args);
  FUZZ_REQUIRE(bad == e.bad);
  if (bad >= 0) return 0;
  for (const char* field : {s.monitor, s.srun, s.defaults, s.actions, s.mailer}) {
    FUZZ_REQUIRE(bounded_length(field) < VALUE_MAX);
  }
  FUZZ_REQUIRE(s.monitor == e.monitor && s.srun == e.srun && s.defaults == e.defaults && s.actions == e.actions &&
               s.mailer == e.mailer);
  FUZZ_REQUIRE(s.enable_all == e.enable_all && s.mail == e.mail);

  // The option's callback: the value normalised, then kept if it fits.
  const char* value = parastack_option_value(lines.front().c_str());
  FUZZ_REQUIRE(value != nullptr);
  char kept[VALUE_MAX] = "unchanged";
  if (parastack_copy_value(kept, value) != 0) {
    FUZZ_REQUIRE(std::strlen(value) >= VALUE_MAX && std::strcmp(kept, "unchanged") == 0);
    return 0;
  }
  FUZZ_REQUIRE(std::strcmp(kept, value) == 0);
  if (std::strcmp(value, "help") == 0 || std::strcmp(value, "off") == 0) return 0;

  // mpi-progress: the plain reading of the site's then the user's list (the last item of each name
  // wins; only an absolute path names the library) agrees with the plugin's.
  char library[VALUE_MAX];
  const int wanted = parastack_progress_choice(s.defaults, kept, library);
  FUZZ_REQUIRE(bounded_length(library) < VALUE_MAX && library[0] == '/');
  bool expect_wanted = false;
  std::string expect_library;
  for (const std::string& list : {std::string(s.defaults), std::string(kept)}) {
    std::stringstream items(list);
    for (std::string item; std::getline(items, item, ',');) {
      if (item.starts_with("mpi-progress=")) {
        const std::string v = item.substr(13);
        expect_wanted = v == "on" || v == "yes" || v == "true" || v == "1";
      } else if (item.starts_with("mpi-progress-library=") && item.size() > 21 && item[21] == '/') {
        expect_library = item.substr(21);
      }
    }
  }
  FUZZ_REQUIRE(wanted == static_cast<int>(expect_wanted));
  FUZZ_REQUIRE(expect_library.empty() || expect_library == library);
  // LD_PRELOAD: the library first, then what was there, or what was there when it holds the library.
  char preload[2 * VALUE_MAX + 2];
  if (parastack_preload_value(preload, sizeof preload, library, kept) == 0) {
    const std::string out = preload;
    FUZZ_REQUIRE(out == kept || out == std::string(library) + (kept[0] ? std::string(":") + kept : ""));
  }

  // At submission: parastack-monitor --check-options [--job-options SITE] [--job-options USER]
  // [--allowed-actions LIST], in the plugin's argv[16].
  const char* argv[16] = {s.monitor, "--check-options"};
  const int argc = parastack_add_choices(&s, kept, argv, 2);
  FUZZ_REQUIRE(argc >= 2 && argc <= 8);
  argv[argc] = nullptr;
  const std::vector<std::string> monitor_args(argv, argv + argc);
  try {
    const auto expanded = parastack::cli::expand_job_options(monitor_args);
    FUZZ_REQUIRE(expanded.front() == s.monitor);
    // The user's list is expanded last: each of its names ends with the user's last value.
    std::map<std::string, std::string> users;
    std::stringstream items(kept);
    for (std::string item; std::getline(items, item, ',');) {
      if (!item.empty()) users[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
    }
    for (const auto& [name, user_value] : users) {
      bool found = false;
      for (const auto& a : expanded) found = found || a == "--" + name + "=" + user_value;
      FUZZ_REQUIRE(found);
    }
  } catch (const std::runtime_error&) {
    // Refused at submission, as parastack-monitor --check-options refuses it.
  }
  return 0;
}
