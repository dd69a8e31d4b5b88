#include "core/key/host_target.h"

namespace aotcache {

v1::Target HostTarget() {
  v1::Target target;
#if defined(__x86_64__)
  target.set_arch("x86_64");
#elif defined(__aarch64__)
  target.set_arch("aarch64");
#else
  target.set_arch("unknown");
#endif
#if defined(__linux__) && defined(__GLIBC__)
  target.set_abi("linux-gnu");
#elif defined(__linux__)
  target.set_abi("linux");
#else
  target.set_abi("unknown");
#endif
  return target;
}

}  // namespace aotcache
