#include "client/cli/remote_commands.h"

#include <algorithm>
#include <chrono>
#include <ostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "client/cli/cli_flags.h"
#include "client/cli/cli_json.h"
#include "client/cli/command_args.h"
#include "client/cli/read_graph.h"
#include "client/cli/remote_session.h"
#include "client/cli/store_commands.h"
#include "client/cli/top_command.h"
#include "client/cli/transfer_commands.h"
#include "client/cpp/client.h"
#include "core/key/target.h"
#include "core/paths/byte_size.h"

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

int RunCompile(RemoteSession& remote, const RemoteInvocation& inv) {
  absl::StatusOr<v1::Graph> graph = ReadGraphFile(inv.positional[0]);
  if (!graph.ok()) {
    remote.err() << inv.positional[0] << ": " << graph.status().message()
                 << "\n";
    return 1;
  }
  v1::CompileRequest request;
  *request.mutable_graph() = *std::move(graph);
  *request.mutable_target() = HostTarget();
  // Stored artifacts come by digest and are checked against it.
  request.set_artifacts_by_reference(true);
  v1::CompileResponse response;
  auto start = std::chrono::steady_clock::now();
  grpc::Status status = remote.Call(300, [&](grpc::ClientContext* context) {
    return remote.daemon().compile().Compile(context, request, &response);
  });
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!status.ok()) return remote.Fail(status);
  if (!response.has_forward()) {
    absl::Status fetched = remote.FetchArtifact(response.forward_digest(),
                                                response.mutable_forward());
    if (!fetched.ok()) return remote.Fail(fetched);
  }
  v1::GetBackwardResponse backward;
  if (inv.backward && response.mode() == v1::MODE_TRAINING) {
    // Carries the request: answered even if the entry is gone.
    v1::GetBackwardRequest backward_request;
    backward_request.set_key(response.key());
    *backward_request.mutable_request() = std::move(request);
    backward_request.set_artifact_by_reference(true);
    status = remote.Call(300, [&](grpc::ClientContext* context) {
      return remote.daemon().compile().GetBackward(context, backward_request,
                                                   &backward);
    });
    if (!status.ok()) return remote.Fail(status);
    if (!backward.has_backward()) {
      absl::Status fetched = remote.FetchArtifact(backward.backward_digest(),
                                                  backward.mutable_backward());
      if (!fetched.ok()) return remote.Fail(fetched);
    }
  }
  if (inv.json) {
    response.mutable_forward()->clear_payload();
    if (!inv.backward) {
      remote.out() << CliJson(response);
      return 0;
    }
    backward.mutable_backward()->clear_payload();
    remote.out() << "{\"compile\": " << CliJson(response)
                 << ",\n\"get_backward\": " << CliJson(backward) << "}\n";
    return 0;
  }
  remote.out() << "key:      " << absl::BytesToHexString(response.key()) << "\n"
               << "mode:     " << v1::Mode_Name(response.mode()) << "\n"
               << "status:   " << v1::CompileStatus_Name(response.status());
  if (!response.bypass_reason().empty()) {
    remote.out() << " (" << response.bypass_reason() << ")";
  }
  if (response.shared_compile())
    remote.out() << " (shared a concurrent compile)";
  if (!response.not_stored_reason().empty()) {
    remote.out() << " (compiled, not stored: " << response.not_stored_reason()
                 << ")";
  }
  remote.out() << "\nbackward: " << v1::BackwardState_Name(response.backward())
               << "\nforward:  " << response.forward().payload().size()
               << " payload bytes, calling convention "
               << ShortDigest(response.forward().calling_convention_hash())
               << "\n";
  if (backward.has_backward()) {
    remote.out() << "backward artifact: "
                 << backward.backward().payload().size()
                 << " payload bytes, pairs with "
                 << ShortDigest(backward.backward().pairs_with()) << "\n";
  }
  remote.out() << absl::StrFormat(
      "timing:   %.3f ms round trip, %.3f ms compile\n", ms,
      response.compile_seconds() * 1e3);
  return 0;
}

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
  RemoteSession remote(**daemon, out, err);
  if (command == "compile") return RunCompile(remote, inv);
  if (command == "stats") return RunStats(remote, inv);
  if (command == "ls") return RunList(remote, inv);
  if (command == "show") return RunShow(remote, inv, key);
  if (command == "rm") return RunDelete(remote, key);
  if (command == "evict") return RunEvict(remote, inv);
  if (command == "export") return RunExport(remote, inv);
  if (command == "import") return RunImport(remote, inv.positional[0]);
  if (command == "top") return RunTop(remote, inv);
  return RunVerify(remote, inv);
}

}  // namespace aotcache
