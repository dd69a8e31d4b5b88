#include "core/backend/native/native_backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend/native/fusion.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/validate.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

// Bumped whenever generated code changes for the same graph.
constexpr char kCodegenVersion[] = "1";

std::vector<std::string> DefaultFlags() {
  // IEEE semantics kept: no -ffast-math. The loops vectorize with OpenMP
  // SIMD; math functions do not set errno.
  std::vector<std::string> flags = {"-O3", "-fopenmp-simd", "-fno-math-errno",
                                    "-std=c++17"};
#if defined(__x86_64__)
  flags.push_back("-march=x86-64-v2");  // Until the target names its CPU.
#endif
  return flags;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NativeBackend>> NativeBackend::Create(
    HostCompilerOptions options) {
  if (options.flags.empty()) options.flags = DefaultFlags();
  AOTCACHE_ASSIGN_OR_RETURN(std::string compiler,
                            HostCompilerVersion(options.compiler));
  std::string version = absl::StrCat(kCodegenVersion, "; ", compiler, "; ",
                                     absl::StrJoin(options.flags, " "), "; ",
                                     absl::StrJoin(options.libraries, " "));
  return std::unique_ptr<NativeBackend>(
      new NativeBackend(std::move(options), std::move(version)));
}

absl::StatusOr<v1::Artifact> NativeBackend::Compile(
    const v1::Graph& graph, const ArtifactSpec& spec) const {
  AOTCACHE_ASSIGN_OR_RETURN(v1::Artifact artifact,
                            ReferenceBackend().Compile(graph, spec));
  v1::NativeProgram native;
  if (!native.mutable_program()->ParseFromString(artifact.payload())) {
    return absl::InternalError("the reference program does not parse");
  }
  AOTCACHE_ASSIGN_OR_RETURN(
      ResolvedGraph resolved,
      ValidateGraph(native.program().graph(), InternalGraphLimits()));
  std::vector<FusedGroup> groups = FindFusedGroups(resolved);
  if (!groups.empty()) {
    // A group reads its inputs when its last node runs, later than the
    // buffer plan assumed: their memory may have been reused by then. Until
    // the plan knows the groups, every result gets memory of its own.
    v1::ReferenceProgram* program = native.mutable_program();
    for (int& slot : *program->mutable_result_slot()) slot = -1;
    program->clear_slot_bytes();
    native.set_source(GenerateKernels(resolved, groups));
    AOTCACHE_ASSIGN_OR_RETURN(*native.mutable_shared_object(),
                              CompileSharedObject(native.source(), options_));
    for (size_t i = 0; i < groups.size(); ++i) {
      v1::NativeProgram::Kernel* k = native.add_kernels();
      k->set_symbol(absl::StrCat("aotcache_kernel_", i));
      for (int n : groups[i].nodes) k->add_nodes(n);
      for (int v : groups[i].inputs) k->add_inputs(v);
      k->set_output(groups[i].output);
    }
  }
  artifact.set_backend(std::string(name()));
  artifact.set_backend_version(version_);
  artifact.set_payload(DeterministicBytes(native));
  return artifact;
}

}  // namespace aotcache
