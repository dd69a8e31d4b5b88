#include "client/cli/analyze_command.h"

#include <memory>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/cli/cli_flags.h"
#include "client/cli/read_graph.h"
#include "core/analysis/analyze.h"
#include "core/analysis/mode.h"
#include "core/backend/native/backend_choice.h"
#include "core/graph/graph_json.h"
#include "core/key/cache_key.h"
#include "core/key/target.h"

namespace aotcache {
namespace {

std::string Lower(absl::string_view enum_name, absl::string_view prefix) {
  std::string s(absl::StripPrefix(enum_name, prefix));
  for (char& c : s) c = static_cast<char>(std::tolower(c));
  return s;
}

void PrintReadable(const v1::Graph& graph, const Analysis& a,
                   const std::string& key, std::ostream& out) {
  const v1::ViewAndMutationData& vmd = a.view_and_mutation;
  std::vector<bool> caller_rg;
  for (const v1::Input& in : graph.inputs()) {
    caller_rg.push_back(in.meta().requires_grad());
  }
  out << "mode: " << Lower(v1::Mode_Name(a.mode), "MODE_") << "  ("
      << ExplainMode(caller_rg, vmd) << ")\n";
  out << "key:  " << key << "\n";
  if (!a.random_ops.empty()) {
    out << "random ops: " << a.random_ops << "\n";
  }
  out << "inputs:\n";
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    const v1::InputAliasInfo& in = vmd.inputs(i);
    std::vector<std::string> facts;
    if (in.requires_grad()) facts.push_back("requires_grad");
    facts.push_back(in.is_leaf() ? "leaf" : "non-leaf");
    if (in.mutates_data()) {
      facts.push_back(in.mutations_under_no_grad_or_inference_mode()
                          ? "mutates_data(under no_grad)"
                          : "mutates_data");
    }
    if (in.mutates_metadata()) facts.push_back("mutates_metadata");
    if (in.mutations_hidden_from_autograd()) facts.push_back("hidden");
    out << "  [" << i << "] " << graph.inputs(i).name() << ": "
        << absl::StrJoin(facts, ", ") << "\n";
  }
  out << "outputs:\n";
  for (int j = 0; j < vmd.outputs_size(); ++j) {
    const v1::OutputAliasInfo& o = vmd.outputs(j);
    out << "  [" << j << "] " << graph.outputs(j) << ": "
        << Lower(v1::OutputType_Name(o.output_type()), "OUTPUT_TYPE_");
    if (o.has_base_idx()) out << " (base " << o.base_idx() << ")";
    if (o.requires_grad()) out << ", requires_grad";
    out << "\n";
  }
  out << "intermediate bases: " << vmd.num_intermediate_bases() << "\n";
  for (const v1::SyntheticBase& b : vmd.synthetic_bases()) {
    out << "synthetic base: storage " << b.storage() << " (" << b.size()
        << " elements) for inputs " << absl::StrJoin(b.inputs(), ", ") << "\n";
  }
  std::vector<std::string> tangents;
  for (const v1::TangentInfo& t : vmd.tangents()) {
    tangents.push_back(absl::StrCat(
        Lower(v1::TangentSource_Name(t.source()), "TANGENT_SOURCE_"), "[",
        t.index(), "]"));
  }
  out << "tangents: "
      << (tangents.empty() ? "none" : absl::StrJoin(tangents, ", ")) << "\n";
}

}  // namespace

const CommandSpec& AnalyzeSpec() {
  static const auto* spec = new CommandSpec{
      "analyze",
      "[--json] [--keep-input-mutations] [--backend=auto|native|reference] "
      "GRAPH.json",
      "a graph's mode, ViewAndMutationData and cache key; no daemon needed",
      {&absl::GetFlagReflectionHandle(FLAGS_json),
       &absl::GetFlagReflectionHandle(FLAGS_keep_input_mutations),
       &absl::GetFlagReflectionHandle(FLAGS_backend)},
      1,
      1};
  return *spec;
}

int RunAnalyzeCommand(const std::vector<std::string>& raw_args,
                      std::ostream& out, std::ostream& err) {
  CommandArgs args(AnalyzeSpec(), raw_args, out, err);
  if (args.stop()) return args.exit_code();
  const std::string& path = args.positional()[0];
  const bool json = absl::GetFlag(FLAGS_json);
  const std::string backend_name = absl::GetFlag(FLAGS_backend);
  v1::CompileOptions options;
  options.set_keep_input_mutations(absl::GetFlag(FLAGS_keep_input_mutations));
  absl::StatusOr<v1::Graph> graph = ReadGraphFile(path);
  if (!graph.ok()) {
    err << path << ": " << graph.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<Analysis> analysis = Analyze(*graph, options);
  if (!analysis.ok()) {
    err << path << ": " << analysis.status().message() << "\n";
    return 1;
  }
  // The key the daemon gives the graph: its backend's context for a
  // client on this machine.
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      ChooseBackend(backend_name, [] {
        return NativeBackend::CreateChecked(HostCompilerFromEnvironment());
      });
  absl::StatusOr<KeyContext> context =
      backend.ok() ? KeyContextFor(**backend, HostTarget(), "")
                   : backend.status();
  if (!context.ok()) {
    err << "aotcache analyze: " << context.status().message() << "\n";
    return 2;
  }
  CacheKey key = ComputeKey(analysis->graph, analysis->view_and_mutation,
                            analysis->mode, options, *context);
  if (json) {
    absl::StatusOr<v1::Graph> functional = FunctionalGraph(*analysis);
    if (!functional.ok()) {
      err << path << ": " << functional.status().message() << "\n";
      return 1;
    }
    v1::AnalysisReport report;
    report.set_mode(analysis->mode);
    *report.mutable_view_and_mutation() = analysis->view_and_mutation;
    report.set_key(key.ToHex());
    *report.mutable_functional_graph() = *std::move(functional);
    out << ToJson(report);
  } else {
    PrintReadable(*graph, *analysis, key.ToHex(), out);
  }
  return 0;
}

}  // namespace aotcache
