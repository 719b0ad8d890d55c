// This machine's name and addresses, as reports, rank tables and launch keys give them.
#pragma once

#include <string>
#include <vector>

namespace parastack::os {

// The node name (uname), or "localhost" when the kernel will not say.
std::string host_name();

// Every address of this host's network interfaces (loopback included), IPv4 as "10.0.0.1" and
// IPv6 as "fd00::2": the forms a peer of this host may know it by. Empty when they cannot be read.
std::vector<std::string> host_addresses();

}  // namespace parastack::os
