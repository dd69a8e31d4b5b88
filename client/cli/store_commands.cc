#include "client/cli/store_commands.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli_json.h"
#include "core/paths/byte_size.h"
#include "google/protobuf/text_format.h"

namespace aotcache {
namespace {

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

// The generated C++ of an entry's native artifacts.
int PrintSource(RemoteSession& remote, const v1::CacheEntry& e) {
  int printed = 0;
  for (const std::string& digest : {e.forward_digest(), e.backward_digest()}) {
    if (digest.empty()) continue;
    v1::Artifact artifact;
    if (absl::Status fetched = remote.FetchArtifact(digest, &artifact);
        !fetched.ok()) {
      return remote.Fail(fetched);
    }
    v1::NativeProgram native;
    if (artifact.backend() != "native" ||
        !native.ParseFromString(artifact.payload())) {
      continue;
    }
    remote.out() << "// " << v1::ArtifactKind_Name(artifact.kind()) << " "
                 << digest << "\n"
                 << (native.source().empty() ? "// (no kernels)\n"
                                             : native.source());
    ++printed;
  }
  if (printed == 0) {
    remote.err() << "aotcache: this entry has no native artifacts (backend "
                 << e.backend() << ")\n";
    return 1;
  }
  return 0;
}

}  // namespace

int RunStats(RemoteSession& remote, const RemoteInvocation& inv) {
  v1::StatsResponse s;
  grpc::Status status =
      remote.Admin(10, &v1::AdminService::Stub::Stats, v1::StatsRequest(), &s);
  if (!status.ok()) return remote.Fail(status);
  if (inv.json) {
    remote.out() << CliJson(s);
    return 0;
  }
  remote.out() << absl::StrFormat(
      "hits                  %d\n  from known bytes    %d\n"
      "misses                %d\n"
      "bypasses              %d\n  from memory         %d\n"
      "saves                 %d\n"
      "save failures         %d\nbackward compiles     %d\n"
      "backward hits         %d\nbytes stored          %d\n"
      "corrupt artifacts     %d\ncompile seconds saved %.6f\n",
      s.hits(), s.memoized_hits(), s.misses(), s.bypasses(),
      s.bypass_memo_hits(), s.saves(), s.save_failures(), s.backward_compiles(),
      s.backward_hits(), s.bytes_stored(), s.corrupt_artifacts(),
      s.compile_seconds_saved());
  for (const auto& [reason, count] : s.bypass_reasons()) {
    remote.out() << "  bypass: " << reason << "  " << count << "\n";
  }
  if (s.misses_not_compiled() > 0) {
    remote.out() << "misses not compiled   " << s.misses_not_compiled()
                 << "  (callers without the compile scope)\n";
  }
  if (s.artifact_bytes_written() > 0) {
    remote.out() << absl::StrFormat(
        "artifacts written     %d bytes, %d at rest (%.2fx)\n",
        s.artifact_bytes_written(), s.artifact_bytes_at_rest(),
        static_cast<double>(s.artifact_bytes_written()) /
            static_cast<double>(
                std::max<int64_t>(1, s.artifact_bytes_at_rest())));
  }
  remote.out() << "store                 " << s.store_entries() << " entries, "
               << FormatByteSize(s.store_bytes());
  if (s.max_size() > 0) {
    remote.out() << " of " << FormatByteSize(s.max_size()) << " (hard limit "
                 << FormatByteSize(s.max_size_hard_limit()) << ")";
  }
  remote.out() << "\n";
  if (s.evicted_entries() > 0) {
    remote.out() << "evicted               " << s.evicted_entries()
                 << " entries, " << FormatByteSize(s.evicted_bytes()) << " ("
                 << s.eviction_sweeps() << " sweeps)\n";
  }
  if (!s.store_write_problem().empty()) {
    remote.out() << "store not written: " << s.store_write_problem() << "\n";
  }
  if (!s.store_recovery_damage().empty()) {
    remote.out() << "store damaged at open: " << s.store_recovery_damage()
                 << "\n";
  }
  return 0;
}

int RunList(RemoteSession& remote, const RemoteInvocation& inv) {
  v1::ListEntriesRequest request;
  request.set_page_size(500);
  v1::ListEntriesResponse all;
  do {
    v1::ListEntriesResponse page;
    grpc::Status status =
        remote.Admin(30, &v1::AdminService::Stub::ListEntries, request, &page);
    if (!status.ok()) return remote.Fail(status);
    for (auto& e : *page.mutable_entries()) *all.add_entries() = e;
    all.set_unreadable(all.unreadable() + page.unreadable());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  if (inv.json) {
    remote.out() << CliJson(all);
    return 0;
  }
  remote.out() << absl::StrFormat("%-64s  %-15s  %-12s %9s  %-12s %9s  %6s\n",
                                  "KEY", "MODE", "FORWARD", "BYTES", "BACKWARD",
                                  "BYTES", "HITS");
  for (const v1::EntrySummary& e : all.entries()) {
    remote.out() << absl::StrFormat(
        "%-64s  %-15s  %-12s %9d  %-12s %9d  %6d\n",
        absl::BytesToHexString(e.key()), v1::Mode_Name(e.mode()),
        ShortDigest(e.forward_digest()), e.forward_bytes(),
        e.mode() == v1::MODE_TRAINING
            ? (e.backward_digest().empty() ? "pending"
                                           : ShortDigest(e.backward_digest()))
            : "-",
        e.backward_bytes(), e.hits());
  }
  remote.out() << all.entries_size() << " entries\n";
  if (all.unreadable() > 0) {
    remote.out()
        << all.unreadable()
        << " unreadable entries left out (aotcache verify drops them)\n";
  }
  return 0;
}

int RunShow(RemoteSession& remote, const RemoteInvocation& inv,
            const std::string& key) {
  v1::GetEntryRequest request;
  request.set_key(key);
  v1::LookupResponse response;
  grpc::Status status =
      remote.Admin(10, &v1::AdminService::Stub::GetEntry, request, &response);
  if (!status.ok()) return remote.Fail(status);
  v1::CacheEntry& e = *response.mutable_entry();
  if (inv.source) return PrintSource(remote, e);
  if (inv.json) {
    e.clear_graph();
    e.clear_backward_graph();
    remote.out() << CliJson(e);
    return 0;
  }
  remote.out() << "key:       " << absl::BytesToHexString(e.key()) << "\n"
               << "mode:      " << v1::Mode_Name(e.mode()) << "\n"
               << "backend:   " << e.backend() << "\n"
               << "forward:   " << e.forward_digest() << " ("
               << e.forward_bytes() << " bytes, compiled in "
               << absl::StrFormat("%.3f", e.forward_compile_seconds() * 1e3)
               << " ms)\n";
  if (e.mode() == v1::MODE_TRAINING) {
    remote.out() << "backward:  ";
    if (e.backward_digest().empty()) {
      remote.out() << "pending (" << e.backward_graph().nodes_size()
                   << "-node graph stored)\n";
    } else {
      remote.out() << e.backward_digest() << " (" << e.backward_bytes()
                   << " bytes)\n";
    }
  }
  remote.out() << "graph:     " << e.graph().nodes_size() << " nodes\n";
  const v1::ViewAndMutationData& vmd = e.metadata().view_and_mutation();
  for (int i = 0; i < vmd.inputs_size(); ++i) {
    remote.out() << "input " << i << ":   " << SetFields(vmd.inputs(i)) << "\n";
  }
  for (int i = 0; i < vmd.outputs_size(); ++i) {
    remote.out() << "output " << i << ":  " << SetFields(vmd.outputs(i))
                 << "\n";
  }
  if (!vmd.synthetic_bases().empty()) {
    remote.out() << "synthetic bases: " << vmd.synthetic_bases_size() << "\n";
  }
  return 0;
}

int RunDelete(RemoteSession& remote, const std::string& key) {
  v1::DeleteEntryRequest request;
  request.set_key(key);
  v1::DeleteEntryResponse response;
  grpc::Status status = remote.Admin(10, &v1::AdminService::Stub::DeleteEntry,
                                     request, &response);
  if (!status.ok()) return remote.Fail(status);
  remote.out() << "deleted " << absl::BytesToHexString(key) << "\n";
  return 0;
}

int RunEvict(RemoteSession& remote, const RemoteInvocation& inv) {
  v1::EvictRequest request;
  if (inv.to_bytes >= 0) request.set_to_bytes(inv.to_bytes);
  if (inv.older_than >= absl::ZeroDuration()) {
    request.set_older_than_seconds(absl::ToInt64Seconds(inv.older_than));
  }
  v1::EvictResponse response;
  grpc::Status status =
      remote.Admin(3600, &v1::AdminService::Stub::Evict, request, &response);
  if (!status.ok()) return remote.Fail(status);
  if (inv.json) {
    remote.out() << CliJson(response);
    return 0;
  }
  remote.out() << "evicted " << response.entries() << " entries ("
               << FormatByteSize(response.bytes()) << ")";
  if (response.spared() > 0) {
    remote.out() << ", spared " << response.spared() << " used meanwhile";
  }
  remote.out() << "; the store holds " << response.store_entries()
               << " entries, " << FormatByteSize(response.store_bytes())
               << "\n";
  return 0;
}

int RunVerify(RemoteSession& remote, const RemoteInvocation& inv) {
  v1::VerifyResponse response;
  grpc::Status status = remote.Admin(3600, &v1::AdminService::Stub::Verify,
                                     v1::VerifyRequest(), &response);
  if (!status.ok()) return remote.Fail(status);
  if (inv.json) {
    remote.out() << CliJson(response);
  } else {
    remote.out() << "checked " << response.checked() << " artifacts, "
                 << response.corrupt_size() << " corrupt\n";
    for (const std::string& digest : response.corrupt()) {
      remote.out() << "  dropped artifact " << digest
                   << " (recompiled on next request)\n";
    }
    remote.out() << "checked " << response.checked_entries() << " entries, "
                 << response.corrupt_entries_size() << " corrupt\n";
    for (const std::string& key : response.corrupt_entries()) {
      remote.out() << "  dropped entry " << key
                   << " (recompiled on next request)\n";
    }
    if (!response.recovery_damage().empty()) {
      remote.out() << "damaged at open: " << response.recovery_damage() << "\n";
    }
  }
  return response.corrupt().empty() && response.corrupt_entries().empty() &&
                 response.recovery_damage().empty()
             ? 0
             : 1;
}

}  // namespace aotcache
