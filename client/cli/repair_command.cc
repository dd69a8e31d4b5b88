#include "client/cli/repair_command.h"

#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/escaping.h"
#include "client/cli/cli_flags.h"
#include "core/paths/data_dir.h"
#include "core/store/rocksdb_store.h"

namespace aotcache {

const CommandSpec& RepairSpec() {
  static const auto* spec = new CommandSpec{
      "repair",
      "[--data_dir=DIR]",
      "salvages a store that does not open (stop the daemon first)",
      {&absl::GetFlagReflectionHandle(FLAGS_data_dir)}};
  return *spec;
}

int RunRepairCommand(const std::vector<std::string>& raw_args,
                     std::ostream& out, std::ostream& err) {
  CommandArgs args(RepairSpec(), raw_args, out, err);
  if (args.stop()) return args.exit_code();
  std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  if (data_dir.empty()) data_dir = DefaultDataDir();
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
