// Every op of the registry has what each layer needs: shape inference, a
// runtime kernel (an in-place op runs as its functional counterpart, which
// functionalization puts in its place), and a derivative rule when it is
// differentiable, or an entry in kWithout saying why it has none; and the
// Python package's list of random ops is the registry's. docs/adding-an-op.md
// says where each of these lives.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/autodiff/derivatives.h"
#include "core/graph/op_registry.h"
#include "core/runtime/kernel.h"
#include "gtest/gtest.h"

namespace aotcache {
namespace {

// What an op lacks on purpose, and why: {op, part} -> reason.
const std::map<std::pair<std::string, std::string>, std::string> kWithout = {
    {{"aten.detach.default", "derivative"},
     "its result is a fresh object with no autograd history "
     "(joint_graph.cc records nothing for it)"},
};

// The op whose kernel and derivative rule serve `op`.
const std::string& RuleOp(const OpInfo& op) {
  const bool in_place = op.effect == OpEffect::kInPlace ||
                        op.effect == OpEffect::kInPlaceMetadata;
  return in_place ? op.functional_counterpart : op.qualified_name;
}

// The parts `op` lacks: "infer", "kernel", "derivative".
std::vector<std::string> Missing(const OpInfo& op) {
  std::vector<std::string> missing;
  if (op.infer == nullptr) missing.push_back("infer");
  if (FindKernel(RuleOp(op)) == nullptr) missing.push_back("kernel");
  if (op.differentiable && FindDerivative(RuleOp(op)) == nullptr) {
    missing.push_back("derivative");
  }
  return missing;
}

TEST(OpCoverageTest, EveryOpHasShapeInferenceAKernelAndADerivativeRule) {
  std::set<std::pair<std::string, std::string>> lacking;
  for (const OpInfo& op : OpRegistry::Get().ops()) {
    if (op.decompose != nullptr) continue;  // Rewritten into other ops.
    for (const std::string& part : Missing(op)) {
      lacking.insert({op.qualified_name, part});
      EXPECT_TRUE(kWithout.count({op.qualified_name, part}))
          << op.qualified_name << " has no " << part
          << (RuleOp(op) != op.qualified_name ? " (for " + RuleOp(op) + ")"
                                              : "")
          << ": add it (docs/adding-an-op.md), or say why in kWithout";
    }
  }
  for (const auto& [entry, reason] : kWithout) {
    EXPECT_TRUE(lacking.count(entry))
        << entry.first << " has a " << entry.second
        << " now, or is gone: remove it from kWithout";
  }
}

TEST(OpCoverageTest, DecompositionsNeedNothingElse) {
  for (const OpInfo& op : OpRegistry::Get().ops()) {
    if (op.decompose == nullptr) continue;
    EXPECT_EQ(op.infer, nullptr) << op.qualified_name;
  }
}

// The quoted op names of `name = frozenset({...})` in a Python file.
std::set<std::string> PythonFrozenset(const std::string& path,
                                      const std::string& name) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const size_t begin = s.find(name + " = frozenset({");
  const size_t end = s.find("})", begin);
  if (begin == std::string::npos || end == std::string::npos) return {};
  const std::string body = s.substr(begin, end - begin);
  std::set<std::string> ops;
  const std::regex quoted("\"(aten\\.[^\"]+)\"");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), quoted);
       it != std::sregex_iterator(); ++it) {
    ops.insert((*it)[1]);
  }
  return ops;
}

TEST(OpCoverageTest, ThePythonPackagesRandomOpsAreTheRegistrys) {
  std::set<std::string> random;
  for (const OpInfo& op : OpRegistry::Get().ops()) {
    if (op.randomness == Randomness::kRandom) random.insert(op.qualified_name);
  }
  ASSERT_FALSE(random.empty());
  EXPECT_EQ(PythonFrozenset(AOTCACHE_SOURCE_DIR
                            "/client/python/aotcache/fx_export.py",
                            "RANDOM_OPS"),
            random);
}

}  // namespace
}  // namespace aotcache
