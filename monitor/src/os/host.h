// This machine's name as reports and rank tables give it.
#pragma once

#include <string>

namespace parastack::os {

// The node name (uname), or "localhost" when the kernel will not say.
std::string host_name();

}  // namespace parastack::os
