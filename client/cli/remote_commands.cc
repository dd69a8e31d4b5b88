#include "client/cli/remote_commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <ostream>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cli/cli_json.h"
#include "client/cli/compile_command.h"
#include "client/cli/read_graph.h"
#include "client/cpp/connection.h"
#include "core/key/digest.h"
#include "core/key/target.h"
#include "core/paths/byte_size.h"
#include "core/paths/data_dir.h"
#include "core/status_macros.h"
#include "core/store/export_format.h"
#include "google/protobuf/text_format.h"

namespace aotcache {
namespace {

struct Invocation {
  std::string server;
  bool json = false;
  bool backward = false;   // compile: fetch the backward too.
  bool source = false;     // show: print the native kernels' source.
  std::string older_than;  // evict: an age (7d).
  std::string to_size;     // evict: a size (20G).
  std::string to;          // export: the file to write.
  std::string prefix;      // export: a key prefix in hex.
  double interval = 2;     // top: seconds between lines.
  int64_t count = -1;      // top: lines to print; negative: until killed.
  std::vector<std::string> positional;
};

bool ParseArgs(const std::vector<std::string>& args, Invocation* inv) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--json") {
      inv->json = true;
    } else if (arg == "--backward") {
      inv->backward = true;
    } else if (arg == "--source") {
      inv->source = true;
    } else if (arg == "--server" && i + 1 < args.size()) {
      inv->server = args[++i];
    } else if (absl::StartsWith(arg, "--server=")) {
      inv->server = arg.substr(9);
    } else if (absl::StartsWith(arg, "--older-than=")) {
      inv->older_than = arg.substr(13);
    } else if (absl::StartsWith(arg, "--to-size=")) {
      inv->to_size = arg.substr(10);
    } else if (absl::StartsWith(arg, "--to=")) {
      inv->to = arg.substr(5);
    } else if (absl::StartsWith(arg, "--prefix=")) {
      inv->prefix = arg.substr(9);
    } else if (absl::StartsWith(arg, "--interval=")) {
      if (!absl::SimpleAtod(arg.substr(11), &inv->interval) ||
          !(inv->interval > 0)) {
        return false;
      }
    } else if (absl::StartsWith(arg, "--count=")) {
      if (!absl::SimpleAtoi(arg.substr(8), &inv->count)) return false;
    } else if (absl::StartsWith(arg, "-")) {
      return false;
    } else {
      inv->positional.push_back(arg);
    }
  }
  return true;
}

bool ParseKey(const std::string& hex, std::string* key) {
  if (hex.size() != 64) return false;
  for (char c : hex) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  *key = absl::HexStringToBytes(hex);
  return true;
}

// One line per message: the names of its fields that are set, with values
// for the ones that are not true booleans. "-" when none are.
std::string SetFields(const google::protobuf::Message& message) {
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  std::string line;
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (!line.empty()) line += " ";
    line += field->name();
    if (field->type() != google::protobuf::FieldDescriptor::TYPE_BOOL) {
      std::string value;
      google::protobuf::TextFormat::PrintFieldValueToString(message, field, -1,
                                                            &value);
      absl::StrAppend(&line, "=", value);
    }
  }
  return line.empty() ? "-" : line;
}

std::string Short(const std::string& digest) {
  return digest.empty() ? "-" : digest.substr(0, 12);
}

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

class Remote {
 public:
  Remote(Connection connection, std::ostream& out, std::ostream& err)
      : connection_(std::move(connection)),
        target_(connection_.server()),
        out_(out),
        err_(err),
        compile_(v1::CompileService::NewStub(connection_.channel())),
        admin_(v1::AdminService::NewStub(connection_.channel())) {}

  std::unique_ptr<grpc::ClientContext> Context(int seconds) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    connection_.Prepare(ctx.get(), absl::Seconds(seconds));
    return ctx;
  }

  // Reports a failed call; returns the exit code.
  int Usage(const absl::Status& status) {
    err_ << "aotcache: " << status.message() << "\n";
    return 2;
  }

  int Fail(const grpc::Status& status) {
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
        status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      err_ << "aotcache: no daemon answers at " << target_ << " ("
           << status.error_message()
           << "); start one with scripts/run or pass --server\n";
      return 3;
    }
    if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
        status.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      err_ << "aotcache: " << status.error_message()
           << " (the token comes from $AOTCACHE_TOKEN)\n";
      return 1;
    }
    err_ << "aotcache: " << status.error_message() << "\n";
    return 1;
  }

  int Compile(const Invocation& inv) {
    absl::StatusOr<v1::Graph> graph = ReadGraphFile(inv.positional[0]);
    if (!graph.ok()) {
      err_ << inv.positional[0] << ": " << graph.status().message() << "\n";
      return 1;
    }
    v1::CompileRequest request;
    *request.mutable_graph() = *std::move(graph);
    *request.mutable_target() = HostTarget();
    v1::CompileResponse response;
    auto start = std::chrono::steady_clock::now();
    grpc::Status status =
        compile_->Compile(Context(300).get(), request, &response);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (!status.ok()) return Fail(status);
    v1::GetBackwardResponse backward;
    if (inv.backward && response.mode() == v1::MODE_TRAINING) {
      // Carries the request: answered even if the entry is gone.
      v1::GetBackwardRequest backward_request;
      backward_request.set_key(response.key());
      *backward_request.mutable_request() = std::move(request);
      status = compile_->GetBackward(Context(300).get(), backward_request,
                                     &backward);
      if (!status.ok()) return Fail(status);
    }
    if (inv.json) {
      response.mutable_forward()->clear_payload();
      if (!inv.backward) {
        out_ << CliJson(response);
        return 0;
      }
      backward.mutable_backward()->clear_payload();
      out_ << "{\"compile\": " << CliJson(response)
           << ",\n\"get_backward\": " << CliJson(backward) << "}\n";
      return 0;
    }
    out_ << "key:      " << absl::BytesToHexString(response.key()) << "\n"
         << "mode:     " << v1::Mode_Name(response.mode()) << "\n"
         << "status:   " << v1::CompileStatus_Name(response.status());
    if (!response.bypass_reason().empty()) {
      out_ << " (" << response.bypass_reason() << ")";
    }
    if (response.shared_compile()) out_ << " (shared a concurrent compile)";
    if (!response.not_stored_reason().empty()) {
      out_ << " (compiled, not stored: " << response.not_stored_reason() << ")";
    }
    out_ << "\nbackward: " << v1::BackwardState_Name(response.backward())
         << "\nforward:  " << response.forward().payload().size()
         << " payload bytes, calling convention "
         << Short(response.forward().calling_convention_hash()) << "\n";
    if (backward.has_backward()) {
      out_ << "backward artifact: " << backward.backward().payload().size()
           << " payload bytes, pairs with "
           << Short(backward.backward().pairs_with()) << "\n";
    }
    out_ << absl::StrFormat("timing:   %.3f ms round trip, %.3f ms compile\n",
                            ms, response.compile_seconds() * 1e3);
    return 0;
  }

  int Stats(const Invocation& inv) {
    v1::StatsResponse s;
    grpc::Status status =
        admin_->Stats(Context(10).get(), v1::StatsRequest(), &s);
    if (!status.ok()) return Fail(status);
    if (inv.json) {
      out_ << CliJson(s);
      return 0;
    }
    out_ << absl::StrFormat(
        "hits                  %d\n  from known bytes    %d\n"
        "misses                %d\n"
        "bypasses              %d\n  from memory         %d\n"
        "saves                 %d\n"
        "save failures         %d\nbackward compiles     %d\n"
        "backward hits         %d\nbytes stored          %d\n"
        "corrupt artifacts     %d\ncompile seconds saved %.6f\n",
        s.hits(), s.memoized_hits(), s.misses(), s.bypasses(),
        s.bypass_memo_hits(), s.saves(), s.save_failures(),
        s.backward_compiles(), s.backward_hits(), s.bytes_stored(),
        s.corrupt_artifacts(), s.compile_seconds_saved());
    for (const auto& [reason, count] : s.bypass_reasons()) {
      out_ << "  bypass: " << reason << "  " << count << "\n";
    }
    if (s.misses_not_compiled() > 0) {
      out_ << "misses not compiled   " << s.misses_not_compiled()
           << "  (callers without the compile scope)\n";
    }
    if (s.artifact_bytes_written() > 0) {
      out_ << absl::StrFormat(
          "artifacts written     %d bytes, %d at rest (%.2fx)\n",
          s.artifact_bytes_written(), s.artifact_bytes_at_rest(),
          static_cast<double>(s.artifact_bytes_written()) /
              static_cast<double>(
                  std::max<int64_t>(1, s.artifact_bytes_at_rest())));
    }
    out_ << "store                 " << s.store_entries() << " entries, "
         << FormatByteSize(s.store_bytes());
    if (s.max_size() > 0) {
      out_ << " of " << FormatByteSize(s.max_size()) << " (hard limit "
           << FormatByteSize(s.max_size_hard_limit()) << ")";
    }
    out_ << "\n";
    if (s.evicted_entries() > 0) {
      out_ << "evicted               " << s.evicted_entries() << " entries, "
           << FormatByteSize(s.evicted_bytes()) << " (" << s.eviction_sweeps()
           << " sweeps)\n";
    }
    if (!s.store_write_problem().empty()) {
      out_ << "store not written: " << s.store_write_problem() << "\n";
    }
    if (!s.store_recovery_damage().empty()) {
      out_ << "store damaged at open: " << s.store_recovery_damage() << "\n";
    }
    return 0;
  }

  int List(const Invocation& inv) {
    v1::ListEntriesRequest request;
    request.set_page_size(500);
    v1::ListEntriesResponse all;
    do {
      v1::ListEntriesResponse page;
      grpc::Status status =
          admin_->ListEntries(Context(30).get(), request, &page);
      if (!status.ok()) return Fail(status);
      for (auto& e : *page.mutable_entries()) *all.add_entries() = e;
      all.set_unreadable(all.unreadable() + page.unreadable());
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    if (inv.json) {
      out_ << CliJson(all);
      return 0;
    }
    out_ << absl::StrFormat("%-64s  %-15s  %-12s %9s  %-12s %9s  %6s\n", "KEY",
                            "MODE", "FORWARD", "BYTES", "BACKWARD", "BYTES",
                            "HITS");
    for (const v1::EntrySummary& e : all.entries()) {
      out_ << absl::StrFormat(
          "%-64s  %-15s  %-12s %9d  %-12s %9d  %6d\n",
          absl::BytesToHexString(e.key()), v1::Mode_Name(e.mode()),
          Short(e.forward_digest()), e.forward_bytes(),
          e.mode() == v1::MODE_TRAINING
              ? (e.backward_digest().empty() ? "pending"
                                             : Short(e.backward_digest()))
              : "-",
          e.backward_bytes(), e.hits());
    }
    out_ << all.entries_size() << " entries\n";
    if (all.unreadable() > 0) {
      out_ << all.unreadable()
           << " unreadable entries left out (aotcache verify drops them)\n";
    }
    return 0;
  }

  // The generated C++ of an entry's native artifacts.
  int PrintSource(const v1::CacheEntry& e) {
    int printed = 0;
    for (const std::string& digest :
         {e.forward_digest(), e.backward_digest()}) {
      if (digest.empty()) continue;
      v1::FetchArtifactRequest request;
      request.set_digest(digest);
      std::unique_ptr<grpc::ClientContext> context = Context(60);
      auto reader = compile_->FetchArtifact(context.get(), request);
      std::string bytes;
      v1::ArtifactChunk chunk;
      while (reader->Read(&chunk)) bytes += chunk.data();
      grpc::Status status = reader->Finish();
      if (!status.ok()) return Fail(status);
      v1::Artifact artifact;
      v1::NativeProgram native;
      if (!artifact.ParseFromString(bytes) || artifact.backend() != "native" ||
          !native.ParseFromString(artifact.payload())) {
        continue;
      }
      out_ << "// " << v1::ArtifactKind_Name(artifact.kind()) << " " << digest
           << "\n"
           << (native.source().empty() ? "// (no kernels)\n" : native.source());
      ++printed;
    }
    if (printed == 0) {
      err_ << "aotcache: this entry has no native artifacts (backend "
           << e.backend() << ")\n";
      return 1;
    }
    return 0;
  }

  int Show(const Invocation& inv, const std::string& key) {
    v1::GetEntryRequest request;
    request.set_key(key);
    v1::LookupResponse response;
    grpc::Status status =
        admin_->GetEntry(Context(10).get(), request, &response);
    if (!status.ok()) return Fail(status);
    v1::CacheEntry& e = *response.mutable_entry();
    if (inv.source) return PrintSource(e);
    if (inv.json) {
      e.clear_graph();
      e.clear_backward_graph();
      out_ << CliJson(e);
      return 0;
    }
    out_ << "key:       " << absl::BytesToHexString(e.key()) << "\n"
         << "mode:      " << v1::Mode_Name(e.mode()) << "\n"
         << "backend:   " << e.backend() << "\n"
         << "forward:   " << e.forward_digest() << " (" << e.forward_bytes()
         << " bytes, compiled in "
         << absl::StrFormat("%.3f", e.forward_compile_seconds() * 1e3)
         << " ms)\n";
    if (e.mode() == v1::MODE_TRAINING) {
      out_ << "backward:  ";
      if (e.backward_digest().empty()) {
        out_ << "pending (" << e.backward_graph().nodes_size()
             << "-node graph stored)\n";
      } else {
        out_ << e.backward_digest() << " (" << e.backward_bytes()
             << " bytes)\n";
      }
    }
    out_ << "graph:     " << e.graph().nodes_size() << " nodes\n";
    const v1::ViewAndMutationData& vmd = e.metadata().view_and_mutation();
    for (int i = 0; i < vmd.inputs_size(); ++i) {
      out_ << "input " << i << ":   " << SetFields(vmd.inputs(i)) << "\n";
    }
    for (int i = 0; i < vmd.outputs_size(); ++i) {
      out_ << "output " << i << ":  " << SetFields(vmd.outputs(i)) << "\n";
    }
    if (!vmd.synthetic_bases().empty()) {
      out_ << "synthetic bases: " << vmd.synthetic_bases_size() << "\n";
    }
    return 0;
  }

  int Delete(const std::string& key) {
    v1::DeleteEntryRequest request;
    request.set_key(key);
    v1::DeleteEntryResponse response;
    grpc::Status status =
        admin_->DeleteEntry(Context(10).get(), request, &response);
    if (!status.ok()) return Fail(status);
    out_ << "deleted " << absl::BytesToHexString(key) << "\n";
    return 0;
  }

  int Evict(const Invocation& inv) {
    v1::EvictRequest request;
    if (!inv.to_size.empty()) {
      absl::StatusOr<int64_t> bytes = ParseByteSize(inv.to_size);
      if (!bytes.ok()) return Usage(bytes.status());
      request.set_to_bytes(*bytes);
    }
    if (!inv.older_than.empty()) {
      absl::StatusOr<absl::Duration> age = ParseAge(inv.older_than);
      if (!age.ok()) return Usage(age.status());
      request.set_older_than_seconds(absl::ToInt64Seconds(*age));
    }
    v1::EvictResponse response;
    grpc::Status status =
        admin_->Evict(Context(3600).get(), request, &response);
    if (!status.ok()) return Fail(status);
    if (inv.json) {
      out_ << CliJson(response);
      return 0;
    }
    out_ << "evicted " << response.entries() << " entries ("
         << FormatByteSize(response.bytes()) << ")";
    if (response.spared() > 0) {
      out_ << ", spared " << response.spared() << " used meanwhile";
    }
    out_ << "; the store holds " << response.store_entries() << " entries, "
         << FormatByteSize(response.store_bytes()) << "\n";
    return 0;
  }

  int Export(const Invocation& inv) {
    std::string prefix;
    if (inv.prefix.size() % 2 != 0 || inv.prefix.size() > 64 ||
        !absl::c_all_of(inv.prefix, [](char c) {
          return absl::ascii_isxdigit(static_cast<unsigned char>(c));
        })) {
      err_ << "aotcache: --prefix='" << inv.prefix
           << "' is not a key prefix (an even number of hex digits)\n";
      return 2;
    }
    prefix = absl::HexStringToBytes(inv.prefix);
    const std::string temp = inv.to + ".partial";
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) {
      err_ << "aotcache: cannot write " << temp << "\n";
      return 1;
    }
    // Checked as it arrives, as an import will check it.
    ExportReader check(CheckOnly());
    Progress progress(err_, "exported");
    v1::ExportRequest request;
    request.set_key_prefix(prefix);
    auto context = Context(24 * 3600);
    auto reader = admin_->Export(context.get(), request);
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
      if (!status.ok()) return Fail(status);
      err_ << "aotcache: "
           << (checked.ok() ? "cannot write " + temp
                            : std::string(checked.message()))
           << "\n";
      return 1;
    }
    if (std::rename(temp.c_str(), inv.to.c_str()) != 0) {
      err_ << "aotcache: cannot rename " << temp << " to " << inv.to << "\n";
      return 1;
    }
    out_ << "exported " << check.entries() << " entries, " << check.artifacts()
         << " artifacts (" << FormatByteSize(check.bytes_read()) << ") to "
         << inv.to << "\n";
    return 0;
  }

  int Import(const std::string& path) {
    // The whole file is checked first: a damaged one sends nothing.
    int64_t size = 0;
    {
      ExportReader check(CheckOnly());
      absl::Status checked = ReadFileInChunks(
          path, [&](absl::string_view data) { return check.Feed(data); });
      if (checked.ok()) checked = check.Finish();
      if (!checked.ok()) {
        err_ << "aotcache: " << path << ": " << checked.message()
             << "; nothing imported\n";
        return 1;
      }
      size = check.bytes_read();
    }
    Progress progress(err_, "imported");
    v1::ImportResponse response;
    auto context = Context(24 * 3600);
    auto writer = admin_->Import(context.get(), &response);
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
    if (!status.ok()) return Fail(status);
    if (!read.ok()) {
      err_ << "aotcache: " << read.message() << "\n";
      return 1;
    }
    out_ << "imported " << response.entries() << " entries ("
         << response.present() << " held already), " << response.artifacts()
         << " artifacts from " << path << "\n";
    return 0;
  }

  // One line per interval: the rates over it and the store's size; the
  // first line counts since the daemon started.
  int Top(const Invocation& inv) {
    v1::StatsResponse before;
    absl::Time before_time = absl::InfinitePast();
    for (int64_t line = 0; inv.count < 0 || line < inv.count; ++line) {
      if (line > 0) absl::SleepFor(absl::Seconds(inv.interval));
      v1::StatsResponse now;
      grpc::Status status =
          admin_->Stats(Context(10).get(), v1::StatsRequest(), &now);
      if (!status.ok()) return Fail(status);
      const absl::Time now_time = absl::Now();
      if (line % 20 == 0) {
        out_ << absl::StrFormat("%-10s %9s %9s %9s %7s %8s %10s %10s\n", "time",
                                "hits", "misses", "bypasses", "hit %",
                                "refused", "entries", "size");
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
      out_ << absl::StrFormat(
                  "%-10s %9s %9s %9s %7s %8s %10d %10s\n",
                  line == 0 ? "total"
                            : absl::FormatTime("%H:%M:%S", now_time,
                                               absl::LocalTimeZone()),
                  Rate(hits, line), Rate(misses, line), Rate(bypasses, line),
                  all > 0 ? absl::StrFormat("%.1f", 100 * hits / all) : "-",
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

  // A count (the first line) or a rate per second.
  static std::string Rate(double value, int64_t line) {
    return line == 0 ? absl::StrFormat("%.0f", value)
                     : absl::StrFormat("%.1f/s", value);
  }

  int Verify(const Invocation& inv) {
    v1::VerifyResponse response;
    grpc::Status status =
        admin_->Verify(Context(3600).get(), v1::VerifyRequest(), &response);
    if (!status.ok()) return Fail(status);
    if (inv.json) {
      out_ << CliJson(response);
    } else {
      out_ << "checked " << response.checked() << " artifacts, "
           << response.corrupt_size() << " corrupt\n";
      for (const std::string& digest : response.corrupt()) {
        out_ << "  dropped artifact " << digest
             << " (recompiled on next request)\n";
      }
      out_ << "checked " << response.checked_entries() << " entries, "
           << response.corrupt_entries_size() << " corrupt\n";
      for (const std::string& key : response.corrupt_entries()) {
        out_ << "  dropped entry " << key << " (recompiled on next request)\n";
      }
      if (!response.recovery_damage().empty()) {
        out_ << "damaged at open: " << response.recovery_damage() << "\n";
      }
    }
    return response.corrupt().empty() && response.corrupt_entries().empty() &&
                   response.recovery_damage().empty()
               ? 0
               : 1;
  }

 private:
  const Connection connection_;
  const std::string target_;
  std::ostream& out_;
  std::ostream& err_;
  std::unique_ptr<v1::CompileService::Stub> compile_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

}  // namespace

const char kRemoteCommandsUsage[] =
    "       aotcache compile [--server TARGET] [--json] [--backward] "
    "GRAPH.json\n"
    "       aotcache stats|ls|verify [--server TARGET] [--json]\n"
    "       aotcache show [--server TARGET] [--json | --source] KEY\n"
    "       aotcache rm [--server TARGET] KEY\n"
    "       aotcache evict [--server TARGET] [--json] [--older-than=AGE] "
    "[--to-size=SIZE]\n"
    "       aotcache export [--server TARGET] --to=FILE [--prefix=HEX]\n"
    "       aotcache import [--server TARGET] FILE\n"
    "       aotcache top [--server TARGET] [--interval=SECONDS] [--count=N]\n";

bool IsRemoteCommand(const std::string& command) {
  return command == "compile" || command == "stats" || command == "ls" ||
         command == "show" || command == "rm" || command == "verify" ||
         command == "evict" || command == "export" || command == "import" ||
         command == "top";
}

int RunRemoteCommand(const std::string& command,
                     const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  Invocation inv;
  bool takes_one = command == "compile" || command == "show" ||
                   command == "rm" || command == "import";
  if (!ParseArgs(args, &inv) ||
      inv.positional.size() != (takes_one ? 1u : 0u) ||
      (inv.backward && command != "compile") ||
      (inv.source && command != "show") ||
      ((!inv.older_than.empty() || !inv.to_size.empty()) !=
       (command == "evict")) ||
      (inv.to.empty() != (command != "export")) ||
      (!inv.prefix.empty() && command != "export")) {
    err << "usage:\n" << kRemoteCommandsUsage;
    return 2;
  }
  std::string key;
  if ((command == "show" || command == "rm") &&
      !ParseKey(inv.positional[0], &key)) {
    err << "aotcache: '" << inv.positional[0]
        << "' is not a key (64 hex digits, as `aotcache ls` prints)\n";
    return 2;
  }
  ConnectionOptions connect;
  connect.server = inv.server;
  absl::StatusOr<Connection> connection =
      Connection::Open(WithEnvironment(connect));
  if (!connection.ok()) {
    err << "aotcache: " << connection.status().message() << "\n";
    return 2;
  }
  Remote remote(*std::move(connection), out, err);
  if (command == "compile") return remote.Compile(inv);
  if (command == "stats") return remote.Stats(inv);
  if (command == "ls") return remote.List(inv);
  if (command == "show") return remote.Show(inv, key);
  if (command == "rm") return remote.Delete(key);
  if (command == "evict") return remote.Evict(inv);
  if (command == "export") return remote.Export(inv);
  if (command == "import") return remote.Import(inv.positional[0]);
  if (command == "top") return remote.Top(inv);
  return remote.Verify(inv);
}

}  // namespace aotcache
