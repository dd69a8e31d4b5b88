#include "core/paths/read_file.h"

#include <fstream>
#include <sstream>

namespace aotcache {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace aotcache
