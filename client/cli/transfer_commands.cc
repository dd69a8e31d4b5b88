#include "client/cli/transfer_commands.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/paths/byte_size.h"
#include "core/status_macros.h"
#include "core/store/export_format.h"

namespace aotcache {
namespace {

// Progress on a terminal (stderr), redrawn at most ten times a second;
// nothing when stderr is not one.
class Progress {
 public:
  Progress(std::ostream& err, const char* verb)
      : err_(err), verb_(verb), shown_(isatty(STDERR_FILENO) != 0) {}
  // `entries` negative: not known; `total` positive: a bar.
  void Show(int64_t bytes, int64_t entries, int64_t total = 0) {
    if (!shown_ || absl::Now() - last_ < absl::Milliseconds(100)) return;
    last_ = absl::Now();
    err_ << "\r" << verb_ << " " << FormatByteSize(bytes);
    if (total > 0) {
      const int filled = static_cast<int>(30 * bytes / total);
      err_ << " of " << FormatByteSize(total) << " ["
           << std::string(filled, '#') << std::string(30 - filled, ' ') << "]";
    }
    if (entries >= 0) err_ << ", " << entries << " entries";
    err_ << "   " << std::flush;
  }
  void Done() {
    if (shown_ && last_ != absl::InfinitePast()) err_ << "\n";
  }

 private:
  std::ostream& err_;
  const char* verb_;
  const bool shown_;
  absl::Time last_ = absl::InfinitePast();
};

// Handlers that take every record an ExportReader checked and keep none.
ExportReader::Handlers CheckOnly() {
  return {[](const std::string&, std::string) { return absl::OkStatus(); },
          [](v1::CacheEntry) { return absl::OkStatus(); }};
}

// Calls `take` with `path`'s bytes in chunks of 1 MiB, in order.
absl::Status ReadFileInChunks(
    const std::string& path,
    const std::function<absl::Status(absl::string_view)>& take) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string buffer(size_t{1} << 20, '\0');
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<size_t>(in.gcount());
    if (n == 0) break;
    AOTCACHE_RETURN_IF_ERROR(take(absl::string_view(buffer.data(), n)));
  }
  if (in.bad()) return absl::UnavailableError(absl::StrCat("reading ", path));
  return absl::OkStatus();
}

}  // namespace

int RunExport(RemoteSession& remote, const RemoteInvocation& inv) {
  std::string prefix;
  if (inv.prefix.size() % 2 != 0 || inv.prefix.size() > 64 ||
      !absl::c_all_of(inv.prefix, [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c));
      })) {
    remote.err() << "aotcache: --prefix='" << inv.prefix
                 << "' is not a key prefix (an even number of hex digits)\n";
    return 2;
  }
  prefix = absl::HexStringToBytes(inv.prefix);
  const std::string temp = inv.to + ".partial";
  std::ofstream file(temp, std::ios::binary | std::ios::trunc);
  if (!file) {
    remote.err() << "aotcache: cannot write " << temp << "\n";
    return 1;
  }
  // Checked as it arrives, as an import will check it.
  ExportReader check(CheckOnly());
  Progress progress(remote.err(), "exported");
  v1::ExportRequest request;
  request.set_key_prefix(prefix);
  auto context = remote.daemon().StreamContext(absl::Hours(24));
  auto reader = remote.daemon().admin().Export(context.get(), request);
  v1::ExportChunk chunk;
  absl::Status checked;
  while (checked.ok() && reader->Read(&chunk)) {
    file.write(chunk.data().data(),
               static_cast<std::streamsize>(chunk.data().size()));
    checked = check.Feed(chunk.data());
    progress.Show(check.bytes_read(), check.entries());
  }
  grpc::Status status = reader->Finish();
  progress.Done();
  if (checked.ok() && status.ok()) checked = check.Finish();
  file.close();
  if (!status.ok() || !checked.ok() || !file) {
    std::remove(temp.c_str());
    if (!status.ok()) return remote.Fail(status);
    remote.err() << "aotcache: "
                 << (checked.ok() ? "cannot write " + temp
                                  : std::string(checked.message()))
                 << "\n";
    return 1;
  }
  if (std::rename(temp.c_str(), inv.to.c_str()) != 0) {
    remote.err() << "aotcache: cannot rename " << temp << " to " << inv.to
                 << "\n";
    return 1;
  }
  remote.out() << "exported " << check.entries() << " entries, "
               << check.artifacts() << " artifacts ("
               << FormatByteSize(check.bytes_read()) << ") to " << inv.to
               << "\n";
  return 0;
}

int RunImport(RemoteSession& remote, const std::string& path) {
  // The whole file is checked first: a damaged one sends nothing.
  int64_t size = 0;
  {
    ExportReader check(CheckOnly());
    absl::Status checked = ReadFileInChunks(
        path, [&](absl::string_view data) { return check.Feed(data); });
    if (checked.ok()) checked = check.Finish();
    if (!checked.ok()) {
      remote.err() << "aotcache: " << path << ": " << checked.message()
                   << "; nothing imported\n";
      return 1;
    }
    size = check.bytes_read();
  }
  Progress progress(remote.err(), "imported");
  v1::ImportResponse response;
  auto context = remote.daemon().StreamContext(absl::Hours(24));
  auto writer = remote.daemon().admin().Import(context.get(), &response);
  int64_t sent = 0;
  absl::Status read = ReadFileInChunks(path, [&](absl::string_view data) {
    v1::ImportChunk chunk;
    chunk.set_data(std::string(data));
    if (!writer->Write(chunk)) {
      return absl::UnavailableError("the daemon stopped reading");
    }
    sent += static_cast<int64_t>(data.size());
    progress.Show(sent, -1, size);
    return absl::OkStatus();
  });
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  progress.Done();
  if (!status.ok()) return remote.Fail(status);
  if (!read.ok()) {
    remote.err() << "aotcache: " << read.message() << "\n";
    return 1;
  }
  remote.out() << "imported " << response.entries() << " entries ("
               << response.present() << " held already), "
               << response.artifacts() << " artifacts from " << path << "\n";
  if (response.refused() > 0) {
    remote.err() << "aotcache: refused " << response.refused()
                 << " entries; the first: " << response.refused_reason()
                 << "\n";
    return 1;
  }
  return 0;
}

}  // namespace aotcache
