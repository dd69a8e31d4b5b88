// Targets: what a v1::Target may say (the architectures, ABIs and CPU
// levels aotcache knows, checked before a target reaches a key, the failure
// memory or a compiler's command line), the target of the machine this code
// runs on, and whether code built for a CPU level runs on a machine.
// Thread-safety: pure functions; HostTarget reads the CPU and the
// environment on each call.
#ifndef AOTCACHE_CORE_KEY_TARGET_H_
#define AOTCACHE_CORE_KEY_TARGET_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "aotcache/v1/analysis.pb.h"

namespace aotcache {

// The CPU levels (-march values) of `arch`, oldest first: code built for a
// level runs on every CPU of that level or a later one. Empty for an
// architecture aotcache does not know.
std::vector<absl::string_view> CpuLevels(absl::string_view arch);

// OK when each field of `target` is empty or one aotcache knows: arch
// "x86_64" or "aarch64", abi "linux-gnu" or "linux", cpu one of
// CpuLevels(arch). InvalidArgument naming the field otherwise.
absl::Status ValidateTarget(const v1::Target& target);

// This machine: its architecture, ABI and the latest CPU level it runs, or
// the older level AOTCACHE_TARGET_CPU names (to build code that older hosts
// of a farm share; a level this CPU lacks, or an unknown one, is ignored).
v1::Target HostTarget();

// OK when code built for CPU level `cpu` runs on `host` (an empty `cpu` is
// the architecture's baseline). FailedPrecondition naming both levels when
// it needs a later level than host.cpu or another architecture.
absl::Status CpuLevelRunsOn(absl::string_view cpu, const v1::Target& host);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_KEY_TARGET_H_
