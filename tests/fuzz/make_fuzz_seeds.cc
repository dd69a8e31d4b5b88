// make_fuzz_seeds GRAPHS_DIR OUT_DIR: writes, for every graph JSON in
// GRAPHS_DIR, a CompileResponse (reference forward artifact and metadata)
// to OUT_DIR: the artifact fuzzer's seed corpus.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "aotcache/v1/service.pb.h"
#include "core/analysis/analyze.h"
#include "core/backend/compile_plan.h"
#include "core/backend/reference_backend.h"
#include "core/graph/deterministic_bytes.h"
#include "core/graph/graph_json.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: make_fuzz_seeds GRAPHS_DIR OUT_DIR\n";
    return 2;
  }
  std::filesystem::create_directories(argv[2]);
  int written = 0;
  for (const auto& file : std::filesystem::directory_iterator(argv[1])) {
    std::ifstream in(file.path());
    std::stringstream text;
    text << in.rdbuf();
    aotcache::v1::Graph graph;
    if (!aotcache::ParseJson(text.str(), &graph).ok()) continue;
    auto a = aotcache::Analyze(graph, aotcache::v1::CompileOptions());
    if (!a.ok()) continue;
    auto plan = aotcache::PlanCompilation(*a);
    if (!plan.ok()) continue;
    auto fw = aotcache::CompileForward(*plan, aotcache::ReferenceBackend());
    if (!fw.ok()) continue;
    aotcache::v1::CompileResponse response;
    *response.mutable_metadata() = plan->metadata;
    *response.mutable_forward() = *fw;
    std::ofstream out(
        std::filesystem::path(argv[2]) / file.path().stem().concat(".pb"),
        std::ios::binary);
    out << aotcache::DeterministicBytes(response);
    ++written;
  }
  std::cout << written << " seeds\n";
  return written > 0 ? 0 : 1;
}
