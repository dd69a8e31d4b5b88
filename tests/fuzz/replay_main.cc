// fuzz_replay KIND FILE_OR_DIR...: runs the fuzz target KIND ("graph",
// "json" or "artifact") on every file given (directories: every file in them),
// as the fuzzer would, and prints how many ran. A crash or a broken invariant
// aborts. scripts/test replays the seeds and every input a fuzzer ever
// crashed on (tests/fuzz/regressions) with it.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "tests/fuzz/fuzz_compile.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: fuzz_replay graph|json|artifact FILE_OR_DIR...\n";
    return 2;
  }
  const std::string kind = argv[1];
  int ran = 0;
  auto run = [&](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (kind == "graph") {
      aotcache::fuzz::CompileGraphJson(bytes.str());
    } else if (kind == "json") {
      aotcache::fuzz::ReadJsonBothWays(bytes.str());
    } else {
      aotcache::fuzz::LoadArtifact(bytes.str());
    }
    ++ran;
  };
  for (int i = 2; i < argc; ++i) {
    if (std::filesystem::is_directory(argv[i])) {
      for (const auto& f : std::filesystem::directory_iterator(argv[i])) {
        if (f.is_regular_file()) run(f.path());
      }
    } else {
      run(argv[i]);
    }
  }
  std::cout << ran << " inputs replayed\n";
  return ran > 0 ? 0 : 1;
}
