#include "os/host.h"

#include <sys/utsname.h>

namespace parastack::os {

std::string host_name() {
  utsname name{};
  return ::uname(&name) == 0 ? name.nodename : "localhost";
}

}  // namespace parastack::os
