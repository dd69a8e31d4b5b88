#include "core/paths/dir_budget.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "core/paths/byte_size.h"

namespace aotcache {

DirBudgetReport EnforceDirBudget(const std::string& dir, int64_t max_bytes) {
  DirBudgetReport report;
  struct File {
    std::filesystem::file_time_type used;
    int64_t bytes;
    std::filesystem::path path;
  };
  std::vector<File> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().find(".tmp") != std::string::npos) {
      continue;
    }
    std::error_code stat_ec;
    if (!it->is_regular_file(stat_ec)) continue;
    const auto bytes = static_cast<int64_t>(it->file_size(stat_ec));
    const auto used = it->last_write_time(stat_ec);
    if (stat_ec) continue;  // Gone meanwhile.
    files.push_back({used, bytes, it->path()});
    report.bytes_left += bytes;
  }
  if (max_bytes <= 0 || report.bytes_left <= max_bytes) return report;
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    return std::tie(a.used, a.path) < std::tie(b.used, b.path);
  });
  const int64_t target = max_bytes / 10 * 9;
  for (const File& f : files) {
    if (report.bytes_left <= target) break;
    std::error_code remove_ec;
    if (!std::filesystem::remove(f.path, remove_ec)) continue;
    ++report.files_deleted;
    report.bytes_deleted += f.bytes;
    report.bytes_left -= f.bytes;
  }
  return report;
}

void TouchFile(const std::string& path) {
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // Best effort.
}

int64_t BudgetFromEnv(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  absl::StatusOr<int64_t> bytes = ParseByteSize(value);
  return bytes.ok() ? *bytes : fallback;
}

}  // namespace aotcache
