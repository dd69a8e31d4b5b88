// What bounds one native compile: loops of at most 256 nodes, each
// elementwise formula defined once, and at most 2048 kernels per artifact
// (the rest left to the runtime's kernels). Each against the reference
// backend.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/compare_backends.h"

namespace aotcache {
namespace {

using testing::Count;
using testing::ExpectNativeMatchesReference;
using testing::Filled;
using ::testing::HasSubstr;
using testing::NativeProgramOf;
using testing::Plan;

// `pairs` times: add x, then (when `sums`) sum; JSON of the graph.
std::string Chain(int pairs, bool sums) {
  std::string nodes, previous = "x";
  auto node = [&](const std::string& name, const std::string& op,
                  const std::string& args) {
    absl::StrAppend(&nodes, nodes.empty() ? "" : ",", "{\"name\": \"", name,
                    "\", \"op\": \"", op, "\", \"args\": [", args,
                    "], \"grad_mode\": \"GRAD_MODE_ENABLED\"}");
    previous = name;
  };
  for (int i = 0; i < pairs; ++i) {
    node(absl::StrCat("a", i), "aten.add.Tensor",
         absl::StrCat("{\"node\": \"", previous, "\"}, {\"node\": \"x\"}"));
    if (sums) {
      node(absl::StrCat("s", i), "aten.sum.default",
           absl::StrCat("{\"node\": \"", previous, "\"}"));
    }
  }
  return absl::StrCat(
      "{\"inputs\": [{\"name\": \"x\", \"meta\": {\"shape\": [4], \"dtype\": "
      "\"DTYPE_FLOAT32\", \"is_leaf\": true}}], \"nodes\": [",
      nodes, "], \"outputs\": [\"", previous, "\"]}");
}

TEST(NativeCompileBudgetTest, LongChainsSplitIntoLoopsOfOneFormula) {
  auto p = Plan(Chain(600, /*sums=*/false));
  ASSERT_NE(p, nullptr);
  const std::string source = NativeProgramOf(p->plan).source();
  EXPECT_EQ(Count(source, "extern \"C\" void aotcache_kernel_"),
            3);                                  // 256+256+88
  EXPECT_EQ(Count(source, "static inline"), 1);  // The add, defined once.
  ExpectNativeMatchesReference(
      p->plan, {Filled({4}, [](int64_t i) { return i * 0.5; })});
}

TEST(NativeCompileBudgetTest, PastTheKernelBudgetTheRestRunsInTheRuntime) {
  // 2,100 add-then-sum loops: 52 past the budget of 2,048.
  auto p = Plan(Chain(2100, /*sums=*/true));
  ASSERT_NE(p, nullptr);
  const std::string source = NativeProgramOf(p->plan).source();
  EXPECT_EQ(Count(source, "extern \"C\" void aotcache_kernel_"), 2048);
  EXPECT_THAT(source, HasSubstr("Run by the runtime's kernels: node "));
  EXPECT_THAT(source, HasSubstr(" and 4 more\n"));  // 104 nodes, 100 named.
  ExpectNativeMatchesReference(
      p->plan, {Filled({4}, [](int64_t i) { return i * 1e-3; })});
}

}  // namespace
}  // namespace aotcache
