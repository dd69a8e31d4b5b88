#include "client/cli/remote_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cli/cli_flags.h"
#include "client/cli/cli_json.h"
#include "client/cli/command_args.h"
#include "client/cli/compile_command.h"
#include "client/cli/read_graph.h"
#include "client/cli/remote_session.h"
#include "client/cli/top_command.h"
#include "client/cli/transfer_commands.h"
#include "client/cpp/client.h"
#include "core/key/digest.h"
#include "core/key/target.h"
#include "core/paths/byte_size.h"
#include "core/paths/data_dir.h"
#include "google/protobuf/text_format.h"

namespace aotcache {
namespace {

absl::StatusOr<std::string> ParseKey(const std::string& hex) {
  if (hex.size() != 64 || !std::all_of(hex.begin(), hex.end(), [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c));
      })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", hex, "' is not a key (64 hex digits, as `aotcache ls` prints)"));
  }
  return absl::HexStringToBytes(hex);
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

class Remote : public RemoteSession {
 public:
  using RemoteSession::RemoteSession;

  // The stored artifact `digest`, checked against it.
  absl::Status Fetch(const std::string& digest, v1::Artifact* artifact) {
    absl::StatusOr<std::string> bytes = daemon_.FetchArtifact(digest);
    if (!bytes.ok()) return bytes.status();
    if (!artifact->ParseFromString(*bytes)) {
      return absl::DataLossError(
          absl::StrCat("artifact ", digest, " does not parse"));
    }
    return absl::OkStatus();
  }

  int Compile(const RemoteInvocation& inv) {
    absl::StatusOr<v1::Graph> graph = ReadGraphFile(inv.positional[0]);
    if (!graph.ok()) {
      err_ << inv.positional[0] << ": " << graph.status().message() << "\n";
      return 1;
    }
    v1::CompileRequest request;
    *request.mutable_graph() = *std::move(graph);
    *request.mutable_target() = HostTarget();
    // Stored artifacts come by digest and are checked against it.
    request.set_artifacts_by_reference(true);
    v1::CompileResponse response;
    auto start = std::chrono::steady_clock::now();
    grpc::Status status = Call(300, [&](grpc::ClientContext* context) {
      return daemon_.compile().Compile(context, request, &response);
    });
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (!status.ok()) return Fail(status);
    if (!response.has_forward()) {
      absl::Status fetched =
          Fetch(response.forward_digest(), response.mutable_forward());
      if (!fetched.ok()) return Fail(fetched);
    }
    v1::GetBackwardResponse backward;
    if (inv.backward && response.mode() == v1::MODE_TRAINING) {
      // Carries the request: answered even if the entry is gone.
      v1::GetBackwardRequest backward_request;
      backward_request.set_key(response.key());
      *backward_request.mutable_request() = std::move(request);
      backward_request.set_artifact_by_reference(true);
      status = Call(300, [&](grpc::ClientContext* context) {
        return daemon_.compile().GetBackward(context, backward_request,
                                             &backward);
      });
      if (!status.ok()) return Fail(status);
      if (!backward.has_backward()) {
        absl::Status fetched =
            Fetch(backward.backward_digest(), backward.mutable_backward());
        if (!fetched.ok()) return Fail(fetched);
      }
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

  int Stats(const RemoteInvocation& inv) {
    v1::StatsResponse s;
    grpc::Status status = Call(10, [&](grpc::ClientContext* context) {
      return daemon_.admin().Stats(context, v1::StatsRequest(), &s);
    });
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

  int List(const RemoteInvocation& inv) {
    v1::ListEntriesRequest request;
    request.set_page_size(500);
    v1::ListEntriesResponse all;
    do {
      v1::ListEntriesResponse page;
      grpc::Status status = Call(30, [&](grpc::ClientContext* context) {
        return daemon_.admin().ListEntries(context, request, &page);
      });
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
      v1::Artifact artifact;
      if (absl::Status fetched = Fetch(digest, &artifact); !fetched.ok()) {
        return Fail(fetched);
      }
      v1::NativeProgram native;
      if (artifact.backend() != "native" ||
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

  int Show(const RemoteInvocation& inv, const std::string& key) {
    v1::GetEntryRequest request;
    request.set_key(key);
    v1::LookupResponse response;
    grpc::Status status = Call(10, [&](grpc::ClientContext* context) {
      return daemon_.admin().GetEntry(context, request, &response);
    });
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
    grpc::Status status = Call(10, [&](grpc::ClientContext* context) {
      return daemon_.admin().DeleteEntry(context, request, &response);
    });
    if (!status.ok()) return Fail(status);
    out_ << "deleted " << absl::BytesToHexString(key) << "\n";
    return 0;
  }

  int Evict(const RemoteInvocation& inv) {
    v1::EvictRequest request;
    if (inv.to_bytes >= 0) request.set_to_bytes(inv.to_bytes);
    if (inv.older_than >= absl::ZeroDuration()) {
      request.set_older_than_seconds(absl::ToInt64Seconds(inv.older_than));
    }
    v1::EvictResponse response;
    grpc::Status status = Call(3600, [&](grpc::ClientContext* context) {
      return daemon_.admin().Evict(context, request, &response);
    });
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

  int Verify(const RemoteInvocation& inv) {
    v1::VerifyResponse response;
    grpc::Status status = Call(3600, [&](grpc::ClientContext* context) {
      return daemon_.admin().Verify(context, v1::VerifyRequest(), &response);
    });
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
};

}  // namespace

const std::vector<CommandSpec>& RemoteCommandSpecs() {
  using absl::GetFlagReflectionHandle;
  const absl::CommandLineFlag* server = &GetFlagReflectionHandle(FLAGS_server);
  const absl::CommandLineFlag* json = &GetFlagReflectionHandle(FLAGS_json);
  static const auto* specs = new std::vector<CommandSpec>{
      {"compile",
       "[--server=TARGET] [--json] [--backward] GRAPH.json",
       "compiles a graph file through the daemon (--local: here, alone)",
       {server, json, &GetFlagReflectionHandle(FLAGS_backward)},
       1,
       1},
      {"stats",
       "[--server=TARGET] [--json]",
       "the daemon's counters and its store's size",
       {server, json}},
      {"ls",
       "[--server=TARGET] [--json]",
       "every entry: key, mode, artifacts, hits",
       {server, json}},
      {"show",
       "[--server=TARGET] [--json | --source] KEY",
       "an entry: its mode, artifacts and analysis, or its kernels' C++",
       {server, json, &GetFlagReflectionHandle(FLAGS_source)},
       1,
       1},
      {"rm", "[--server=TARGET] KEY", "deletes an entry", {server}, 1, 1},
      {"verify",
       "[--server=TARGET] [--json]",
       "hashes every stored artifact again; drops the corrupt ones",
       {server, json}},
      {"evict",
       "[--server=TARGET] [--json] [--older-than=AGE] [--to-size=SIZE]",
       "evicts entries by age, or the least recently used down to a size",
       {server, json, &GetFlagReflectionHandle(FLAGS_older_than),
        &GetFlagReflectionHandle(FLAGS_to_size)}},
      {"export",
       "[--server=TARGET] --to=FILE [--prefix=HEX]",
       "writes entries with their artifacts to a file (docs/export-format.md)",
       {server, &GetFlagReflectionHandle(FLAGS_to),
        &GetFlagReflectionHandle(FLAGS_prefix)}},
      {"import",
       "[--server=TARGET] FILE",
       "checks an export file, then stores its entries in the daemon",
       {server},
       1,
       1},
      {"top",
       "[--server=TARGET] [--interval=SECONDS] [--count=N]",
       "the daemon's hit rate, a line per interval",
       {server, &GetFlagReflectionHandle(FLAGS_interval),
        &GetFlagReflectionHandle(FLAGS_count)}},
  };
  return *specs;
}

const CommandSpec* RemoteCommandSpec(const std::string& command) {
  for (const CommandSpec& spec : RemoteCommandSpecs()) {
    if (spec.name == command) return &spec;
  }
  return nullptr;
}

int RunRemoteCommand(const std::string& command,
                     const std::vector<std::string>& raw_args,
                     std::ostream& out, std::ostream& err) {
  const CommandSpec* spec = RemoteCommandSpec(command);
  if (spec == nullptr) {
    err << "aotcache: unknown command '" << command << "'\n";
    return 2;
  }
  CommandArgs args(*spec, raw_args, out, err);
  if (args.stop()) return args.exit_code();
  RemoteInvocation inv;
  inv.json = absl::GetFlag(FLAGS_json);
  inv.backward = absl::GetFlag(FLAGS_backward);
  inv.source = absl::GetFlag(FLAGS_source);
  inv.to = absl::GetFlag(FLAGS_to);
  inv.prefix = absl::GetFlag(FLAGS_prefix);
  inv.interval = absl::GetFlag(FLAGS_interval);
  inv.count = absl::GetFlag(FLAGS_count);
  inv.positional = args.positional();
  if (!absl::GetFlag(FLAGS_to_size).empty()) {
    absl::StatusOr<int64_t> bytes = ParseByteSize(absl::GetFlag(FLAGS_to_size));
    if (!bytes.ok()) return args.Usage(bytes.status());
    inv.to_bytes = *bytes;
  }
  if (!absl::GetFlag(FLAGS_older_than).empty()) {
    absl::StatusOr<absl::Duration> age =
        ParseAge(absl::GetFlag(FLAGS_older_than));
    if (!age.ok()) return args.Usage(age.status());
    inv.older_than = *age;
  }
  if (command == "evict" && inv.to_bytes < 0 &&
      inv.older_than < absl::ZeroDuration()) {
    return args.Usage(
        absl::InvalidArgumentError("say what to evict: --older-than or "
                                   "--to-size"));
  }
  if (command == "export" && inv.to.empty()) {
    return args.Usage(absl::InvalidArgumentError("--to=FILE is needed"));
  }
  if (command == "show" && inv.json && inv.source) {
    return args.Usage(
        absl::InvalidArgumentError("--json or --source, not both"));
  }
  if (!(inv.interval > 0)) {
    return args.Usage(absl::InvalidArgumentError("--interval is positive"));
  }
  std::string key;
  if (command == "show" || command == "rm") {
    absl::StatusOr<std::string> parsed = ParseKey(inv.positional[0]);
    if (!parsed.ok()) return args.Usage(parsed.status());
    key = *std::move(parsed);
  }
  // The daemon's calls as aotcache::Client makes them; no daemon is
  // started for an admin command, and artifacts are not kept.
  ClientOptions options;
  options.server = absl::GetFlag(FLAGS_server);
  options.start_daemon = false;
  options.artifact_dir = "none";
  Client client(options);
  absl::StatusOr<const DaemonCalls*> daemon = client.daemon();
  if (!daemon.ok()) {
    err << "aotcache: " << daemon.status().message() << "\n";
    return 2;
  }
  Remote remote(**daemon, out, err);
  if (command == "compile") return remote.Compile(inv);
  if (command == "stats") return remote.Stats(inv);
  if (command == "ls") return remote.List(inv);
  if (command == "show") return remote.Show(inv, key);
  if (command == "rm") return remote.Delete(key);
  if (command == "evict") return remote.Evict(inv);
  if (command == "export") return RunExport(remote, inv);
  if (command == "import") return RunImport(remote, inv.positional[0]);
  if (command == "top") return RunTop(remote, inv);
  return remote.Verify(inv);
}

}  // namespace aotcache
