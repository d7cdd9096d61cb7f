#pragma once

#include <string>
#include <string_view>

namespace parallax {

// "SIGKILL" for 9; "signal 42" for numbers without a name.
std::string signalName(int signal);
// The number of a strsignal() text as launchers print it ("Killed" -> 9,
// "Segmentation fault (core dumped)" -> 11); 0 when unknown.
int signalFromDescription(std::string_view text);

} // namespace parallax
