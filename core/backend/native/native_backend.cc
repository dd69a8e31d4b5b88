#include "core/backend/native/native_backend.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend/buffer_plan.h"
#include "core/backend/native/contiguous_operands.h"
#include "core/backend/native/fusion.h"
#include "core/backend/native/loop_sources.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/validate.h"
#include "core/key/target.h"
#include "core/status_macros.h"

extern "C" char* openblas_get_config(void);  // OpenBLAS's cblas.h.

namespace aotcache {
namespace {

// Bumped whenever generated code changes for the same graph.
constexpr char kCodegenVersion[] = "30";

std::vector<std::string> DefaultFlags() {
  // IEEE semantics kept: no -ffast-math. The loops vectorize with OpenMP
  // SIMD, math functions through libmvec (fusion.cc); without the builtins
  // GCC would merge sin and cos into a scalar sincos.
  std::vector<std::string> flags = {"-O3",
                                    "-fopenmp-simd",
                                    "-fno-math-errno",
                                    "-std=c++17",
                                    "-fno-builtin-sin",
                                    "-fno-builtin-cos",
                                    "-fno-builtin-sinf",
                                    "-fno-builtin-cosf"};
#if defined(__x86_64__)
  flags.push_back("-march=x86-64");  // Replaced by the target's CPU level.
#endif
  return flags;
}

// The options for `target` (as ArtifactTarget resolved it): its CPU level
// as -march.
HostCompilerOptions ForTarget(HostCompilerOptions options,
                              const v1::Target& target) {
  for (std::string& flag : options.flags) {
    if (absl::StartsWith(flag, "-march=")) flag = "-march=" + target.cpu();
  }
  return options;
}

std::vector<std::string> DefaultLibraries() {
#if defined(__x86_64__)
  return {"-lopenblas", "-lmvec"};  // OpenBLAS; glibc's vector math.
#else
  return {"-lopenblas"};
#endif
}

// The most kernels one artifact compiles. The host compiler takes about 6 ms
// per kernel (5,000 sums of small tensors took 29 s): past this many, the
// groups computing the fewest elements are left to the runtime's kernels,
// so that no graph under the node limit compiles for minutes.
constexpr size_t kMaxKernels = 2048;

// `groups` or, past kMaxKernels, the kMaxKernels of them computing the most
// (output elements times nodes), in their order.
std::vector<FusedGroup> HeaviestGroups(const ResolvedGraph& g,
                                       std::vector<FusedGroup> groups) {
  if (groups.size() <= kMaxKernels) return groups;
  auto work = [&](const FusedGroup& group) {
    return g.values[group.outputs[0]].meta.numel() *
           static_cast<int64_t>(group.nodes.size());
  };
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return work(groups[a]) > work(groups[b]);
  });
  order.resize(kMaxKernels);
  std::sort(order.begin(), order.end());
  std::vector<FusedGroup> kept;
  for (size_t i : order) kept.push_back(std::move(groups[i]));
  return kept;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NativeBackend>> NativeBackend::Create(
    HostCompilerOptions options) {
  if (options.flags.empty()) {
    options.flags = DefaultFlags();
    options.libraries = DefaultLibraries();
  }
  AOTCACHE_ASSIGN_OR_RETURN(std::string compiler,
                            HostCompilerVersion(options.compiler));
  std::string version = absl::StrCat(kCodegenVersion, "; ", compiler, "; ",
                                     absl::StrJoin(options.flags, " "), "; ",
                                     absl::StrJoin(options.libraries, " "));
  return std::unique_ptr<NativeBackend>(
      new NativeBackend(std::move(options), std::move(version)));
}

absl::StatusOr<v1::Target> NativeBackend::ArtifactTarget(
    const v1::Target& requested) const {
  AOTCACHE_RETURN_IF_ERROR(ValidateTarget(requested));
  const v1::Target host = HostTarget();
  v1::Target target = requested;
  if (target.arch().empty()) target.set_arch(host.arch());
  if (target.abi().empty()) target.set_abi(host.abi());
  if (target.arch() != host.arch() || target.abi() != host.abi()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the native backend here builds for ", host.arch(), "-", host.abi(),
        ", not for target ", target.arch(), "-", target.abi()));
  }
  if (target.cpu().empty()) {
    target.set_cpu(std::string(CpuLevels(target.arch()).front()));
  }
  return target;
}

absl::StatusOr<std::unique_ptr<NativeBackend>> NativeBackend::CreateChecked(
    HostCompilerOptions options) {
  AOTCACHE_ASSIGN_OR_RETURN(std::unique_ptr<NativeBackend> native,
                            Create(std::move(options)));
  AOTCACHE_RETURN_IF_ERROR(native->CheckToolchain(HostTarget()));
  return native;
}

absl::Status NativeBackend::CheckToolchain(const v1::Target& target) const {
  AOTCACHE_ASSIGN_OR_RETURN(v1::Target resolved, ArtifactTarget(target));
  absl::StatusOr<std::string> so = CompileSharedObject(
      "extern \"C\" void aotcache_probe() {}\n", ForTarget(options_, resolved));
  if (!so.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the C++ toolchain cannot build native kernels: ",
                     so.status().message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Artifact> NativeBackend::CompileCanonical(
    const v1::Graph& graph, const ArtifactSpec& spec) const {
  AOTCACHE_ASSIGN_OR_RETURN(v1::Artifact artifact,
                            CompileReferenceProgram(graph, spec));
  v1::NativeProgram native;
  if (!native.mutable_program()->ParseFromString(artifact.payload())) {
    return absl::InternalError("the reference program does not parse");
  }
  AOTCACHE_ASSIGN_OR_RETURN(v1::Graph graph_in_layouts,
                            MakeOperandsContiguous(native.program().graph()));
  AOTCACHE_ASSIGN_OR_RETURN(
      ResolvedGraph resolved,
      ValidateGraph(graph_in_layouts, InternalGraphLimits()));
  AOTCACHE_ASSIGN_OR_RETURN(v1::Target target, ArtifactTarget(spec.target));
  native.set_cpu(target.cpu());
  std::vector<FusedGroup> groups =
      HeaviestGroups(resolved, FindFusedGroups(resolved));
  if (!groups.empty()) {
    // A group runs at its last node's turn: plan the memory for that.
    std::vector<int> run_at(resolved.nodes.size());
    for (size_t n = 0; n < run_at.size(); ++n) run_at[n] = static_cast<int>(n);
    for (const FusedGroup& group : groups) {
      for (int n : group.nodes) run_at[n] = group.nodes.back();
    }
    native.set_source(GenerateKernels(resolved, groups));
    AOTCACHE_ASSIGN_OR_RETURN(*native.mutable_program(),
                              PlanBuffers(graph_in_layouts, &run_at));
    AOTCACHE_ASSIGN_OR_RETURN(
        *native.mutable_shared_object(),
        CompileSharedObject(native.source(), ForTarget(options_, target)));
    for (size_t i = 0; i < groups.size(); ++i) {
      v1::NativeProgram::Kernel* k = native.add_kernels();
      k->set_symbol(absl::StrCat("aotcache_kernel_", i));
      for (int n : groups[i].nodes) k->add_nodes(n);
      for (int v : groups[i].inputs) k->add_inputs(v);
      for (int v : groups[i].outputs) k->add_outputs(v);
      k->set_any_layout(groups[i].any_layout());
    }
  }
  artifact.set_backend(std::string(name()));
  artifact.set_backend_version(version_);
  artifact.set_payload(DeterministicBytes(native));
  return artifact;
}

}  // namespace aotcache
