// A directory of files that can be made again -- content-addressed copies:
// the native backend's shared objects (<data dir>/native), a client's
// received artifacts (<data dir>/client-artifacts) -- held to a byte
// budget: past it, the files used longest ago go first (by modification
// time, which users set when they use a file: TouchFile), down to 90% of
// the budget. Files being written (names with ".tmp") are left alone. A
// file deleted while another process holds it open stays readable to it.
// Thread-safety: functions only; concurrent calls, also from other
// processes, at worst delete a file twice.
#ifndef AOTCACHE_CORE_PATHS_DIR_BUDGET_H_
#define AOTCACHE_CORE_PATHS_DIR_BUDGET_H_

#include <cstdint>
#include <string>

namespace aotcache {

struct DirBudgetReport {
  int64_t files_deleted = 0;
  int64_t bytes_deleted = 0;
  int64_t bytes_left = 0;
};

// Holds `dir` (and its subdirectories) to `max_bytes`; 0 means no budget.
DirBudgetReport EnforceDirBudget(const std::string& dir, int64_t max_bytes);

// Marks `path` used now, so that a budget keeps it longest.
void TouchFile(const std::string& path);

// The budget in the environment variable `name` (a size: byte_size.h), else
// `fallback`. A value that is no size is ignored.
int64_t BudgetFromEnv(const char* name, int64_t fallback);

}  // namespace aotcache

#endif  // AOTCACHE_CORE_PATHS_DIR_BUDGET_H_
