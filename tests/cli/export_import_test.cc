// `aotcache export` and `aotcache import` between two real daemons (each on
// 127.0.0.1:0 over its own RocksDB): what one compiled is a hit in the other,
// backward included; a damaged file is refused, named, and sends nothing; a
// forged one (entries under each other's keys, the records' hashes redone)
// is refused entry by entry; --prefix exports what it names.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/remote_commands.h"
#include "core/store/export_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::testing::HasSubstr;

class ExportImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    from_ = Start(from_dir_);
    to_ = Start(to_dir_);
    ASSERT_TRUE(from_ != nullptr && to_ != nullptr);
    file_ = files_.path() + "/nightly.aotcache";
  }

  static std::unique_ptr<Daemon> Start(const testing::TempDir& dir) {
    DaemonOptions options;
    options.data_dir = dir.path();
    options.backend_name = "reference";
    absl::StatusOr<std::unique_ptr<Daemon>> started = Daemon::Start(options);
    EXPECT_THAT(started, IsOk());
    return started.ok() ? *std::move(started) : nullptr;
  }

  // Runs `aotcache COMMAND ARGS --server=<daemon>`; returns the exit code.
  int Run(const Daemon& daemon, const std::string& command,
          std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    args.push_back(absl::StrCat("--server=127.0.0.1:", daemon.port()));
    return RunRemoteCommand(command, args, out_, err_);
  }

  std::string Status(const Daemon& daemon, const std::string& graph) {
    EXPECT_EQ(Run(daemon, "compile", {graph}), 0) << err_.str();
    for (absl::string_view line : absl::StrSplit(out_.str(), '\n')) {
      if (absl::ConsumePrefix(&line, "status:")) {
        return std::string(absl::StripLeadingAsciiWhitespace(line));
      }
    }
    return "";
  }

  const std::string mlp_ = testing::FixturePath("../../examples/mlp.json");
  const std::string ops_ = testing::FixturePath("graphs/assorted_ops__rg.json");
  testing::TempDir from_dir_, to_dir_, files_;
  std::unique_ptr<Daemon> from_, to_;
  std::string file_;
  std::ostringstream out_, err_;
};

TEST_F(ExportImportTest, WhatOneDaemonCompiledIsAHitInTheOther) {
  ASSERT_EQ(Status(*from_, mlp_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Run(*from_, "compile", {"--backward", mlp_}), 0) << err_.str();
  ASSERT_EQ(Status(*from_, ops_), "COMPILE_STATUS_MISS");

  ASSERT_EQ(Run(*from_, "export", {"--to=" + file_}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("exported 2 entries, 3 artifacts"));
  ASSERT_EQ(Run(*to_, "import", {file_}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("imported 2 entries (0 held already)"));

  EXPECT_EQ(Status(*to_, mlp_), "COMPILE_STATUS_HIT");
  EXPECT_THAT(out_.str(), HasSubstr("backward: BACKWARD_STATE_READY"));
  EXPECT_EQ(Status(*to_, ops_), "COMPILE_STATUS_HIT");
  EXPECT_EQ(to_->cache().counters().misses, 0);
  ASSERT_EQ(Run(*to_, "verify", {}), 0) << out_.str();

  // Again: what is there stays as it is.
  ASSERT_EQ(Run(*to_, "import", {file_}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("imported 0 entries (2 held already)"));
}

TEST_F(ExportImportTest, ADamagedFileIsRefusedNamedAndSendsNothing) {
  ASSERT_EQ(Status(*from_, mlp_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Status(*from_, ops_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Run(*from_, "export", {"--to=" + file_}), 0) << err_.str();
  const auto size = std::filesystem::file_size(file_);
  for (const double at : {0.1, 0.5, 0.9}) {
    const std::string damaged = absl::StrCat(file_, ".", at);
    std::filesystem::copy_file(file_, damaged);
    {
      std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
      const auto offset = static_cast<std::streamoff>(size * at);
      f.seekg(offset);
      char c;
      f.get(c);
      f.seekp(offset);
      f.put(static_cast<char>(c ^ 0x20));
    }
    EXPECT_EQ(Run(*to_, "import", {damaged}), 1) << at;
    EXPECT_THAT(err_.str(), HasSubstr("record ")) << at;
    EXPECT_THAT(err_.str(), HasSubstr("nothing imported")) << at;
  }
  // Cut short: no end record.
  std::filesystem::resize_file(file_, size - 10);
  EXPECT_EQ(Run(*to_, "import", {file_}), 1);
  EXPECT_THAT(err_.str(), HasSubstr("ends inside this record"));
  ASSERT_EQ(Run(*to_, "ls", {}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("0 entries"));
}

// A file written with valid records (as anyone can: the record hashes are
// checksums, not signatures) in which the two entries swapped keys: each
// key would serve the other graph's artifacts. The daemon recomputes each
// entry's key from its graph and refuses both.
TEST_F(ExportImportTest, AnEntryWhoseKeyIsNotItsGraphsIsRefused) {
  ASSERT_EQ(Status(*from_, mlp_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Status(*from_, ops_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Run(*from_, "export", {"--to=" + file_}), 0) << err_.str();
  std::vector<std::pair<std::string, std::string>> artifacts;
  std::vector<v1::CacheEntry> entries;
  ExportReader reader({[&](const std::string& digest, std::string bytes) {
                         artifacts.emplace_back(digest, std::move(bytes));
                         return absl::OkStatus();
                       },
                       [&](v1::CacheEntry entry) {
                         entries.push_back(std::move(entry));
                         return absl::OkStatus();
                       }});
  std::ifstream in(file_, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_THAT(reader.Feed(bytes), IsOk());
  ASSERT_THAT(reader.Finish(), IsOk());
  ASSERT_EQ(entries.size(), 2u);
  std::swap(*entries[0].mutable_key(), *entries[1].mutable_key());

  const std::string forged = file_ + ".forged";
  {
    std::ofstream out(forged, std::ios::binary);
    ExportWriter writer([&](absl::string_view data) {
      out.write(data.data(), static_cast<std::streamsize>(data.size()));
      return absl::OkStatus();
    });
    for (const auto& [digest, artifact] : artifacts) {
      ASSERT_THAT(writer.AddArtifact(digest, artifact), IsOk());
    }
    for (const v1::CacheEntry& entry : entries) {
      ASSERT_THAT(writer.AddEntry(entry), IsOk());
    }
    ASSERT_THAT(writer.Finish(), IsOk());
  }
  EXPECT_EQ(Run(*to_, "import", {forged}), 1);
  EXPECT_THAT(out_.str(), HasSubstr("imported 0 entries"));
  EXPECT_THAT(err_.str(), HasSubstr("refused 2 entries"));
  EXPECT_THAT(err_.str(),
              HasSubstr("its key is not the one this daemon gives its graph"));
  ASSERT_EQ(Run(*to_, "ls", {}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("0 entries"));
  // Each graph compiles for itself there.
  EXPECT_EQ(Status(*to_, mlp_), "COMPILE_STATUS_MISS");

  // The honest file imports whole into the same daemon.
  ASSERT_EQ(Run(*to_, "import", {file_}), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("imported 1 entries (1 held already)"));
}

TEST_F(ExportImportTest, APrefixExportsTheEntriesItNames) {
  ASSERT_EQ(Status(*from_, mlp_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Status(*from_, ops_), "COMPILE_STATUS_MISS");
  ASSERT_EQ(Run(*from_, "compile", {mlp_}), 0);
  std::string key;
  for (absl::string_view line : absl::StrSplit(out_.str(), '\n')) {
    if (absl::ConsumePrefix(&line, "key:")) {
      key = std::string(absl::StripLeadingAsciiWhitespace(line));
    }
  }
  ASSERT_EQ(key.size(), 64u);
  for (const std::string& prefix : {key, key.substr(0, 62)}) {
    ASSERT_EQ(Run(*from_, "export", {"--to=" + file_, "--prefix=" + prefix}), 0)
        << err_.str();
    EXPECT_THAT(out_.str(), HasSubstr("exported 1 entries")) << prefix;
  }
  EXPECT_EQ(Run(*from_, "export", {"--to=" + file_, "--prefix=abc"}), 2);
  EXPECT_EQ(Run(*from_, "export", {}), 2);  // No --to.
}

}  // namespace
}  // namespace aotcache
