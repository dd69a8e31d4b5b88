// DaemonFixture: a gtest fixture that runs a real aotcached in the test's
// process -- RocksDB in a temp dir, gRPC on 127.0.0.1:0 -- with stubs of its
// services over one channel. A test that needs other options (limits, a
// wrapped backend) overrides Options().
// Thread-safety: as a gtest fixture; the stubs may be used from several
// threads.
#ifndef AOTCACHE_TESTS_TESTING_DAEMON_FIXTURE_H_
#define AOTCACHE_TESTS_TESTING_DAEMON_FIXTURE_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "aotcache/v1/service.grpc.pb.h"
#include "grpcpp/channel.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "tests/testing/temp_dir.h"

namespace aotcache::testing {

class DaemonFixture : public ::testing::Test {
 protected:
  // What SetUp starts the daemon with: the defaults, its data dir dir_.
  virtual DaemonOptions Options();

  void SetUp() override;

  // "127.0.0.1:PORT".
  std::string address() const;
  // Compile through compile_, with a deadline.
  grpc::Status Compile(const v1::CompileRequest& request,
                       v1::CompileResponse* response,
                       absl::Duration deadline = absl::Seconds(60));

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::CompileService::Stub> compile_;
  std::unique_ptr<v1::AdminService::Stub> admin_;
};

}  // namespace aotcache::testing

#endif  // AOTCACHE_TESTS_TESTING_DAEMON_FIXTURE_H_
