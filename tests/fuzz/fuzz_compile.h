// What the fuzzers run on one input, shared by the libFuzzer targets
// (scripts/fuzz) and the regression test that replays their corpus in
// scripts/test. Each function must return normally on any input; a broken
// invariant aborts (so that the fuzzer reports it).
// Thread-safety: functions only.
#ifndef AOTCACHE_TESTS_FUZZ_FUZZ_COMPILE_H_
#define AOTCACHE_TESTS_FUZZ_FUZZ_COMPILE_H_

#include <string>

namespace aotcache::fuzz {

// `bytes` as graph JSON: validated, analyzed, keyed, planned, compiled by
// the reference backend (forward and backward) and run on zeros. Checks
// that the canonical graph has the same key and that the graph renamed
// with code-carrying names compiles to the same artifacts.
void CompileGraphJson(const std::string& bytes);

// `bytes` as graph JSON read by the fast reader (json_fast_path.h) and by
// protobuf's parser: whatever the fast reader takes, protobuf's parser
// takes too, to the same message.
void ReadJsonBothWays(const std::string& bytes);

// `bytes` as a CompileResponse (a forward artifact and its metadata, as a
// hostile or damaged daemon could send): loaded by the runtime and run.
void LoadArtifact(const std::string& bytes);

}  // namespace aotcache::fuzz

#endif  // AOTCACHE_TESTS_FUZZ_FUZZ_COMPILE_H_
