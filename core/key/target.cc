#include "core/key/target.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/graph/bind_arguments.h"

namespace aotcache {
namespace {

// The index of `cpu` in `levels` (the baseline for an empty one), or -1.
int LevelIndex(const std::vector<absl::string_view>& levels,
               absl::string_view cpu) {
  if (cpu.empty()) return levels.empty() ? -1 : 0;
  auto it = std::find(levels.begin(), levels.end(), cpu);
  return it == levels.end() ? -1 : static_cast<int>(it - levels.begin());
}

#if defined(__x86_64__)
// The x86-64 micro-architecture levels (psABI), from what the CPU has.
const char* DetectedCpuLevel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")) {
    return "x86-64-v4";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2")) {
    return "x86-64-v3";
  }
  if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt")) {
    return "x86-64-v2";
  }
  return "x86-64";
}
#endif

}  // namespace

std::vector<absl::string_view> CpuLevels(absl::string_view arch) {
  if (arch == "x86_64") {
    return {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
  }
  if (arch == "aarch64") return {"armv8-a"};
  return {};
}

absl::Status ValidateTarget(const v1::Target& target) {
  const std::string& arch = target.arch();
  if (!arch.empty() && CpuLevels(arch).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target.arch ", Quoted(arch), " is not one of: x86_64, aarch64"));
  }
  const std::string& abi = target.abi();
  if (!abi.empty() && abi != "linux-gnu" && abi != "linux") {
    return absl::InvalidArgumentError(absl::StrCat(
        "target.abi ", Quoted(abi), " is not one of: linux-gnu, linux"));
  }
  if (target.cpu().empty()) return absl::OkStatus();
  if (arch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("target.cpu ", Quoted(target.cpu()),
                     " names a CPU level without a target.arch"));
  }
  std::vector<absl::string_view> levels = CpuLevels(arch);
  if (LevelIndex(levels, target.cpu()) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target.cpu ", Quoted(target.cpu()), " is not a CPU level of ", arch,
        ": ", absl::StrJoin(levels, ", ")));
  }
  return absl::OkStatus();
}

v1::Target HostTarget() {
  v1::Target target;
#if defined(__x86_64__)
  target.set_arch("x86_64");
  target.set_cpu(DetectedCpuLevel());
#elif defined(__aarch64__)
  target.set_arch("aarch64");
  target.set_cpu("armv8-a");
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
  const char* lowered = std::getenv("AOTCACHE_TARGET_CPU");
  if (lowered != nullptr && CpuLevelRunsOn(lowered, target).ok() &&
      LevelIndex(CpuLevels(target.arch()), lowered) >= 0) {
    target.set_cpu(lowered);
  }
  return target;
}

absl::Status CpuLevelRunsOn(absl::string_view cpu, const v1::Target& host) {
  std::vector<absl::string_view> levels = CpuLevels(host.arch());
  int needed = LevelIndex(levels, cpu);
  int has = LevelIndex(levels, host.cpu());
  if (needed < 0 || has < 0 || needed > has) {
    return absl::FailedPreconditionError(absl::StrCat(
        "code built for CPU level ", Quoted(cpu), " does not run on this ",
        host.arch(), " CPU of level ", Quoted(host.cpu())));
  }
  return absl::OkStatus();
}

}  // namespace aotcache
