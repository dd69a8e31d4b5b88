#include "client/cli/top_command.h"

#include <string>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/paths/byte_size.h"

namespace aotcache {
namespace {

// A count (the first line) or a rate per second.
std::string Rate(double value, int64_t line) {
  return line == 0 ? absl::StrFormat("%.0f", value)
                   : absl::StrFormat("%.1f/s", value);
}

}  // namespace

int RunTop(RemoteSession& remote, const RemoteInvocation& inv) {
  v1::StatsResponse before;
  absl::Time before_time = absl::InfinitePast();
  for (int64_t line = 0; inv.count < 0 || line < inv.count; ++line) {
    if (line > 0) absl::SleepFor(absl::Seconds(inv.interval));
    v1::StatsResponse now;
    grpc::Status status = remote.Admin(10, &v1::AdminService::Stub::Stats,
                                       v1::StatsRequest(), &now);
    if (!status.ok()) return remote.Fail(status);
    const absl::Time now_time = absl::Now();
    if (line % 20 == 0) {
      remote.out() << absl::StrFormat("%-10s %9s %9s %9s %7s %8s %10s %10s\n",
                                      "time", "hits", "misses", "bypasses",
                                      "hit %", "refused", "entries", "size");
    }
    const double seconds =
        line == 0 ? 0 : absl::ToDoubleSeconds(now_time - before_time);
    const auto delta = [&](int64_t v1, int64_t v0) {
      return line == 0 ? static_cast<double>(v1)
                       : static_cast<double>(v1 - v0) / seconds;
    };
    const double hits = delta(now.hits(), before.hits());
    const double misses = delta(now.misses(), before.misses());
    const double bypasses = delta(now.bypasses(), before.bypasses());
    const double all = hits + misses + bypasses;
    remote.out() << absl::StrFormat(
                        "%-10s %9s %9s %9s %7s %8s %10d %10s\n",
                        line == 0 ? "total"
                                  : absl::FormatTime("%H:%M:%S", now_time,
                                                     absl::LocalTimeZone()),
                        Rate(hits, line), Rate(misses, line),
                        Rate(bypasses, line),
                        all > 0 ? absl::StrFormat("%.1f", 100 * hits / all)
                                : "-",
                        Rate(delta(now.misses_not_compiled(),
                                   before.misses_not_compiled()),
                             line),
                        now.store_entries(), FormatByteSize(now.store_bytes()))
                 << std::flush;
    before = now;
    before_time = now_time;
  }
  return 0;
}

}  // namespace aotcache
