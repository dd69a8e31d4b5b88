#include "client/cli/compile_command.h"

#include <ostream>

#include "absl/flags/flag.h"
#include "client/cli/cli_flags.h"
#include "client/cli/read_graph.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/key/digest.h"

namespace aotcache {
namespace {

void PrintArtifact(const char* what, const v1::Artifact& a, bool json,
                   std::ostream& out) {
  std::string bytes = DeterministicBytes(a);
  v1::ReferenceProgram program;
  program.ParseFromString(a.payload());
  if (json) {
    out << "  \"" << what << "\": {\"digest\": \"" << Sha256Hex(bytes)
        << "\", \"bytes\": " << bytes.size() << ", \"calling_convention\": \""
        << a.calling_convention_hash()
        << "\", \"planned_peak_bytes\": " << program.planned_peak_bytes()
        << ", \"unplanned_bytes\": " << program.unplanned_bytes() << "}";
    return;
  }
  out << what << ": " << Sha256Hex(bytes) << " (" << bytes.size() << " bytes, "
      << program.graph().nodes_size() << " nodes, planned peak "
      << program.planned_peak_bytes() << " of " << program.unplanned_bytes()
      << " bytes)\n";
}

}  // namespace

const CommandSpec& LocalCompileSpec() {
  static const auto* spec = new CommandSpec{
      "compile",
      "--local [--json] GRAPH.json",
      "compiles a graph here with the reference backend, without a daemon",
      {&absl::GetFlagReflectionHandle(FLAGS_local),
       &absl::GetFlagReflectionHandle(FLAGS_json)},
      1,
      1};
  return *spec;
}

int RunCompileCommand(const std::vector<std::string>& raw_args,
                      std::ostream& out, std::ostream& err) {
  CommandArgs args(LocalCompileSpec(), raw_args, out, err);
  if (args.stop()) return args.exit_code();
  const std::string& path = args.positional()[0];
  const bool json = absl::GetFlag(FLAGS_json);
  absl::StatusOr<v1::Graph> graph = ReadGraphFile(path);
  if (!graph.ok()) {
    err << path << ": " << graph.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<Analysis> analysis = Analyze(*graph, v1::CompileOptions());
  absl::StatusOr<CompilePlan> plan =
      analysis.ok() ? PlanCompilation(*analysis) : analysis.status();
  ReferenceBackend backend;
  absl::StatusOr<v1::Artifact> forward =
      plan.ok() ? CompileForward(*plan, backend) : plan.status();
  absl::StatusOr<v1::Artifact> backward = absl::NotFoundError("inference");
  if (forward.ok() && plan->backward_graph.has_value()) {
    backward = CompileBackward(*plan, *forward, backend);
    if (!backward.ok()) forward = backward.status();
  }
  if (!forward.ok()) {
    err << path << ": " << forward.status().message() << "\n";
    return 1;
  }
  const v1::CallingConvention& c = forward->calling_convention();
  if (json) {
    out << "{\n  \"mode\": \"" << v1::Mode_Name(analysis->mode)
        << "\",\n  \"num_saved\": " << c.num_saved() << ",\n";
    PrintArtifact("forward", *forward, true, out);
    if (backward.ok()) {
      out << ",\n";
      PrintArtifact("backward", *backward, true, out);
    }
    out << "\n}\n";
    return 0;
  }
  out << "mode: " << v1::Mode_Name(analysis->mode) << "\n";
  PrintArtifact("forward", *forward, false, out);
  if (backward.ok()) {
    PrintArtifact("backward", *backward, false, out);
    out << "saved for backward: " << c.num_saved() << " values\n";
  }
  return 0;
}

}  // namespace aotcache
