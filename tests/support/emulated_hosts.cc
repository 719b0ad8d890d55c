#include "support/emulated_hosts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace parastack::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string address(int host) { return "10.77.0." + std::to_string(host + 1); }

// Runs a short command to completion; its exit status (-1: did not end within a minute).
int run(const std::vector<std::string>& argv, const fs::path& log) {
  ChildProcess child(argv, ChildOptions{{}, log.string(), log.string(), {}});
  return child.wait_exit(60s);
}

void must_run(const std::vector<std::string>& argv, const fs::path& log) {
  if (run(argv, log) != 0) {
    std::string line;
    for (const auto& a : argv) line += a + ' ';
    throw std::runtime_error("emulated hosts: failed: " + line + "\n" + read_file(log));
  }
}

bool on_path(const std::string& program) {
  for (const char* dir : {"/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    if (::access((std::string(dir) + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> EmulatedHosts::unavailable() {
  if (::geteuid() != 0) return "namespaces need root";
  for (const char* tool : {"unshare", "nsenter", "ip", "tini", "dropbear", "dropbearkey", "ssh", "ssh-keygen"}) {
    if (!on_path(tool)) return std::string(tool) + " is not installed (packaging/bootstrap.sh installs it)";
  }
  TempDir scratch;
  const auto log = scratch.path() / "log";
  if (run({"unshare", "--net", "--uts", "--pid", "--fork", "--mount", "true"}, log) != 0) {
    return "cannot create namespaces: " + read_file(log);
  }
  return std::nullopt;
}

EmulatedHosts::EmulatedHosts(int count, int slots) {
  const fs::path dir = dir_.path();
  // Keys and names every host shares. Root's home on the hosts is `home` (an /etc/passwd bound
  // over the real one says so, and ssh and dropbear look there): the ssh client key, its
  // authorized_keys and a client configuration that trusts the throw-away hosts. The real /root
  // stays as it is (the build may live there).
  const fs::path home = dir / "home";
  fs::create_directories(home / ".ssh");
  fs::permissions(home / ".ssh", fs::perms::owner_all);
  std::ofstream(home / ".ssh" / "config") << "Host *\n  StrictHostKeyChecking no\n"
                                             "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n"
                                             "  BatchMode yes\n  ConnectTimeout 10\n";
  must_run({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", (home / ".ssh" / "id_ed25519").string()},
           dir / "keygen.log");
  fs::copy_file(home / ".ssh" / "id_ed25519.pub", home / ".ssh" / "authorized_keys");
  must_run({"dropbearkey", "-t", "ed25519", "-f", (dir / "host_key").string()}, dir / "hostkey.log");
  {
    std::istringstream real(read_file("/etc/passwd"));
    std::ofstream passwd(dir / "passwd");
    for (std::string line; std::getline(real, line);) {
      if (line.rfind("root:", 0) == 0) {
        // root:x:0:0:GECOS:HOME:SHELL
        std::vector<std::string> fields;
        std::istringstream split(line);
        for (std::string field; std::getline(split, field, ':');) fields.push_back(field);
        if (fields.size() == 7) fields[5] = home.string();
        line = fields.at(0);
        for (std::size_t i = 1; i < fields.size(); ++i) line += ':' + fields[i];
      }
      passwd << line << '\n';
    }
    std::ofstream hosts(dir / "hosts");
    std::ofstream hostfile(dir / "hostfile");
    hosts << "127.0.0.1 localhost\n";
    for (int h = 0; h < count; ++h) {
      hosts << address(h) << ' ' << name(h) << '\n';
      for (int slot = 0; slot < slots; ++slot) hostfile << name(h) << '\n';
    }
  }

  for (int h = 0; h < count; ++h) {
    // The host's init: set up its namespaces, then tini (pid 1, reaps orphans) runs its ssh server.
    // --kill-child: if unshare dies, so does the host and everything on it.
    const std::string script =
        "set -e\n"
        "hostname " +
        name(h) +
        "\n"
        "mount -t proc proc /proc\n"
        "mount --bind " +
        (dir / "hosts").string() +
        " /etc/hosts\n"
        "mount --bind " +
        (dir / "passwd").string() +
        " /etc/passwd\n"
        "ip link set lo up\n"
        "echo 1 > \"$PS_READY_DIR/host\"\n"
        "exec tini -- dropbear -F -E -s -p 22 -r " +
        (dir / "host_key").string() + " -P " + (dir / (name(h) + ".pid")).string() + "\n";
    const auto log = (dir / (name(h) + ".log")).string();
    hosts_.push_back(
        std::make_unique<ChildProcess>(std::vector<std::string>{"unshare", "--kill-child", "--net", "--uts", "--pid",
                                                                "--fork", "--mount", "--", "sh", "-c", script},
                                       ChildOptions{{}, log, log, {}}));
    hosts_.back()->wait_ready_file("host", 30s);
    pid_t init = 0;
    for (pid_t pid : hosts_.back()->descendants()) {
      if (pid_inside(pid) == 1) init = pid;
    }
    if (init == 0) throw std::runtime_error("emulated hosts: no init for " + name(h) + "\n" + read_file(log));
    init_.push_back(init);
  }

  // A bridge on node1 with node1's address; a veth from it to every other host.
  std::ostringstream node1;
  node1 << "set -e\nip link add br0 type bridge\nip addr add " << address(0) << "/24 dev br0\nip link set br0 up\n";
  for (int h = 1; h < count; ++h) {
    node1 << "ip link add veth" << h << " type veth peer name eth0 netns " << init_[h] << "\n"
          << "ip link set veth" << h << " master br0 up\n";
  }
  must_run({"nsenter", "-t", std::to_string(init_[0]), "--net", "sh", "-c", node1.str()}, dir / "net.log");
  for (int h = 1; h < count; ++h) {
    must_run({"nsenter", "-t", std::to_string(init_[h]), "--net", "sh", "-c",
              "set -e\nip addr add " + address(h) + "/24 dev eth0\nip link set eth0 up\n"},
             dir / "net.log");
  }
  // Ready when node1 reaches every host over ssh (the servers start while the links come up).
  for (int h = 1; h < count; ++h) {
    auto command = on(0);
    command.insert(command.end(), {"ssh", name(h), "hostname"});
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (run(command, dir / "ssh.log") != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("emulated hosts: no ssh to " + name(h) + ":\n" + read_file(dir / "ssh.log") +
                                 read_file(dir / (name(h) + ".log")));
      }
      std::this_thread::sleep_for(100ms);
    }
  }
}

std::vector<std::string> EmulatedHosts::on(int host) const {
  return {"nsenter", "-t", std::to_string(init_.at(static_cast<std::size_t>(host))), "--net", "--uts", "--mount",
          "--pid",   "--"};
}

pid_t EmulatedHosts::pid_inside(pid_t pid) {
  std::istringstream status(read_file("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    pid_t innermost = 0;
    for (pid_t p; fields >> p;) innermost = p;
    return innermost;
  }
  return 0;
}

int EmulatedHosts::host_of(pid_t pid) const {
  // Each host has its own UTS namespace: the same link target means the same host.
  std::error_code error;
  const auto uts = fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/uts", error);
  if (error) return -1;
  for (std::size_t h = 0; h < init_.size(); ++h) {
    if (fs::read_symlink("/proc/" + std::to_string(init_[h]) + "/ns/uts", error) == uts && !error) {
      return static_cast<int>(h);
    }
  }
  return -1;
}

}  // namespace parastack::testing
