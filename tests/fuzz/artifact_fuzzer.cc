// libFuzzer target: a forward artifact and its metadata (a CompileResponse)
// loaded and run by the runtime (scripts/fuzz).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_compile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  aotcache::fuzz::LoadArtifact(
      std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
