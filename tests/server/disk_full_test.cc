// aotcached on a disk that fills up: a real daemon whose data dir is on a
// small tmpfs, filled by a file beside the store. RocksDB aborts the process
// on a write after one that failed (Debian's build asserts), so the daemon
// must never let RocksDB meet the full disk: answers are compiled and not
// stored (and say so), hits are still served, a restart on the full disk
// works, and stats name the condition.
#include <sys/mount.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace aotcache {
namespace {

using ::aotcache::testing::IsOk;
using ::aotcache::testing::TempDir;

constexpr int64_t kDiskBytes = int64_t{48} << 20;
constexpr int64_t kMinFree = int64_t{16} << 20;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = dir_.path() + "/disk";
    std::filesystem::create_directory(mount_);
    if (mount("tmpfs", mount_.c_str(), "tmpfs", 0,
              absl::StrCat("size=", kDiskBytes).c_str()) != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here (needs root): "
                   << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    daemon_.reset();
    if (mounted_) umount(mount_.c_str());
  }

  void StartDaemon() {
    daemon_.reset();
    DaemonOptions options;
    options.data_dir = mount_ + "/data";
    options.listen = "";
    options.backend_name = "reference";
    options.min_free_bytes = kMinFree;
    auto daemon = Daemon::Start(options);
    ASSERT_THAT(daemon, IsOk());
    daemon_ = *std::move(daemon);
    auto channel = grpc::CreateChannel("unix:" + daemon_->socket_path(),
                                       grpc::InsecureChannelCredentials());
    compile_ = v1::CompileService::NewStub(channel);
    admin_ = v1::AdminService::NewStub(channel);
  }

  v1::CompileResponse Compile(const std::string& fixture) {
    v1::CompileRequest r;
    *r.mutable_graph() = testing::LoadGraphOrDie("graphs/" + fixture);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    v1::CompileResponse response;
    grpc::Status st = compile_->Compile(&ctx, r, &response);
    EXPECT_THAT(st, IsOk());
    return response;
  }

  v1::StatsResponse Stats() {
    grpc::ClientContext ctx;
    v1::StatsResponse stats;
    EXPECT_THAT(admin_->Stats(&ctx, v1::StatsRequest(), &stats), IsOk());
    return stats;
  }

  // Fills the disk up to `leave` free bytes.
  void Fill(int64_t leave) {
    std::filesystem::space_info space = std::filesystem::space(mount_);
    std::ofstream filler(mount_ + "/filler", std::ios::binary);
    const std::string block(1 << 16, 'x');
    for (int64_t n = space.available - leave; n > 0; n -= block.size()) {
      filler.write(block.data(), std::min<int64_t>(n, block.size()));
    }
  }

  TempDir dir_;
  std::string mount_;
  bool mounted_ = false;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<v1::CompileService::Stub> compile_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

TEST_F(DiskFullTest, AnswersServesHitsAndRestartsOnAFullDisk) {
  StartDaemon();
  v1::CompileResponse stored = Compile("mlp_mse__rg.json");
  EXPECT_EQ(stored.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_TRUE(stored.not_stored_reason().empty());
  EXPECT_TRUE(Stats().store_write_problem().empty());

  Fill(/*leave=*/kMinFree / 2);
  for (const char* fixture : {"layer_norm_softmax__rg.json",
                              "assorted_ops__rg.json", "mlp_mse__nrg.json"}) {
    v1::CompileResponse full = Compile(fixture);
    EXPECT_EQ(full.status(), v1::COMPILE_STATUS_MISS) << fixture;
    EXPECT_TRUE(full.forward_digest().empty()) << fixture;
    EXPECT_TRUE(full.has_forward()) << fixture;  // Answered inline.
    EXPECT_TRUE(absl::StrContains(full.not_stored_reason(), "disk is full"))
        << fixture << ": " << full.not_stored_reason();
  }
  EXPECT_EQ(Compile("mlp_mse__rg.json").status(), v1::COMPILE_STATUS_HIT);
  EXPECT_TRUE(absl::StrContains(Stats().store_write_problem(), "disk is full"))
      << Stats().store_write_problem();

  // A restart while the disk is full: read-only, still serving.
  StartDaemon();
  EXPECT_EQ(Compile("mlp_mse__rg.json").status(), v1::COMPILE_STATUS_HIT);
  v1::CompileResponse again = Compile("layer_norm_softmax__rg.json");
  EXPECT_EQ(again.status(), v1::COMPILE_STATUS_MISS);
  EXPECT_FALSE(again.not_stored_reason().empty());
  EXPECT_TRUE(absl::StrContains(Stats().store_write_problem(), "read-only"))
      << Stats().store_write_problem();

  // Space again, a restart: stored again.
  std::filesystem::remove(mount_ + "/filler");
  StartDaemon();
  v1::CompileResponse after = Compile("layer_norm_softmax__rg.json");
  EXPECT_TRUE(after.not_stored_reason().empty()) << after.not_stored_reason();
  EXPECT_EQ(Compile("layer_norm_softmax__rg.json").status(),
            v1::COMPILE_STATUS_HIT);
}

// On ext4, RocksDB's first write to a log reserved a write buffer's size
// and more (fallocate: 72 MB for a 24 KB log): on a 100 MiB volume the
// daemon then said the disk was full and stored nothing more. A loop-mounted
// ext4 image (tmpfs does not show it), as root.
TEST(DiskSpaceTest, TheLogReservesNoSpaceAhead) {
  TempDir dir;
  const std::string image = dir.path() + "/ext4.img";
  const std::string disk = dir.path() + "/disk";
  std::filesystem::create_directory(disk);
  { std::ofstream create(image); }
  std::filesystem::resize_file(image, std::uintmax_t{100} << 20);
  if (std::system(("mkfs.ext4 -q -F " + image + " >/dev/null 2>&1").c_str()) !=
          0 ||
      std::system(
          ("mount -o loop " + image + " " + disk + " 2>/dev/null").c_str()) !=
          0) {
    GTEST_SKIP() << "cannot make and loop-mount an ext4 image here (root)";
  }
  absl::Cleanup unmount = [&] { umount(disk.c_str()); };
  {
    DaemonOptions options;
    options.data_dir = disk + "/data";
    options.listen = "";
    options.backend_name = "reference";
    auto daemon = Daemon::Start(options);
    ASSERT_THAT(daemon, IsOk());
    auto compile = v1::CompileService::NewStub(
        grpc::CreateChannel("unix:" + (*daemon)->socket_path(),
                            grpc::InsecureChannelCredentials()));
    v1::CompileRequest r;
    *r.mutable_graph() = testing::LoadGraphOrDie("graphs/mlp_mse__rg.json");
    grpc::ClientContext ctx;
    v1::CompileResponse response;
    ASSERT_THAT(compile->Compile(&ctx, r, &response), IsOk());
    EXPECT_EQ(response.not_stored_reason(), "");
    EXPECT_EQ((*daemon)->store_write_problem(), "");
    const std::filesystem::space_info space = std::filesystem::space(disk);
    EXPECT_GT(space.available, space.capacity / 2);
  }
}

}  // namespace
}  // namespace aotcache
