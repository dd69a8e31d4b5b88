#include "client/cli/repair_command.h"

#include <ostream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "core/paths/data_dir.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

int RunRepairCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  std::string data_dir = DefaultDataDir();
  for (const std::string& arg : args) {
    absl::string_view value = arg;
    if (!absl::ConsumePrefix(&value, "--data_dir=") || value.empty()) {
      err << "usage: aotcache repair [--data_dir=DIR]\n";
      return 2;
    }
    data_dir = std::string(value);
  }
  const std::string store = data_dir + "/store";
  absl::StatusOr<RocksDbStore::RepairReport> report =
      RocksDbStore::Repair(store);
  if (!report.ok()) {
    err << "aotcache repair: " << report.status().message() << "\n";
    return 1;
  }
  out << "repaired " << store << ": " << report->entries << " entries, "
      << report->artifacts << " artifacts readable\n";
  for (const std::string& step : report->steps) out << "  " << step << "\n";
  for (const std::string& key : report->dropped_entries) {
    out << "  dropped entry " << absl::BytesToHexString(key)
        << " (recompiled on its next request)\n";
  }
  for (const std::string& digest : report->dropped_artifacts) {
    out << "  dropped artifact " << digest
        << " (recompiled on its next request)\n";
  }
  out << "files the repair replaced or could not read are kept in " << store
      << "/lost\n";
  const bool lost = report->lost_unnamed || !report->dropped_entries.empty() ||
                    !report->dropped_artifacts.empty();
  return lost ? 1 : 0;
}

}  // namespace aotcache
