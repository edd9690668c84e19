// Which llvmpipe a test runs on. Debian 12's (Mesa 22.3) miscomputes some emulated int8 convs
// that Mesa 25's runs right (src/kernels/int8.md, "Emulation"); the tests that need Mesa 25
// (CTest "mesa25: ...") skip on an older one with a warning naming it.
#pragma once

#include <cstdio>
#include <string>

namespace denox::test {

// Whether a device is llvmpipe older than Mesa 25. A driver string without a Mesa version
// counts as old: those tests are not run where the version cannot be told.
inline bool llvmpipe_before_mesa25(bool is_llvmpipe, const std::string& driver_info) {
  int major = 0;
  return is_llvmpipe && !(std::sscanf(driver_info.c_str(), "Mesa %d", &major) == 1 && major >= 25);
}

}  // namespace denox::test
