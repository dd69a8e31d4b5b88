#include "core/key/host_target.h"

namespace aotcache {

v1::Target HostTarget() {
  v1::Target target;
#if defined(__x86_64__)
  target.set_arch("x86_64");
  // The x86-64 micro-architecture levels (psABI), from what the CPU has.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")) {
    target.set_cpu("x86-64-v4");
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2")) {
    target.set_cpu("x86-64-v3");
  } else if (__builtin_cpu_supports("sse4.2") &&
             __builtin_cpu_supports("popcnt")) {
    target.set_cpu("x86-64-v2");
  }
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
