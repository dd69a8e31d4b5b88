// Test helpers: reading fixture files and graphs.
// Thread-safety: functions only.
#ifndef AOTCACHE_TESTS_TESTING_FIXTURES_H_
#define AOTCACHE_TESTS_TESTING_FIXTURES_H_

#include <string>
#include <vector>

#include "aotcache/v1/graph.pb.h"

namespace aotcache::testing {

// The tests/fixtures directory of the source tree.
std::string FixturePath(const std::string& relative);
std::string ReadFileOrDie(const std::string& path);
// Parses tests/fixtures/<relative> (proto3 JSON) or aborts the test binary.
v1::Graph LoadGraphOrDie(const std::string& relative);
// The graph files (relative to tests/fixtures/graphs) of every entry of
// tests/fixtures/expected_analysis.json, in its order.
std::vector<std::string> FixtureGraphFiles();
// Parses a graph written inline in a test, or aborts.
v1::Graph GraphFromJson(const std::string& json);

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_FIXTURES_H_
