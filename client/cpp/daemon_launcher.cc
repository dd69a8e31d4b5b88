#include "client/cpp/daemon_launcher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace aotcache {
namespace {

bool IsExecutable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0 &&
         std::filesystem::is_regular_file(path);
}

}  // namespace

absl::StatusOr<std::string> FindAotcached() {
  const char* env = std::getenv("AOTCACHED");
  if (env != nullptr && *env != '\0') {
    if (IsExecutable(env)) return std::string(env);
    return absl::NotFoundError(
        absl::StrCat("AOTCACHED=", env, " is not an executable file"));
  }
  std::error_code ec;
  std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string beside = ec ? "" : (self.parent_path() / "aotcached").string();
  if (IsExecutable(beside)) return beside;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "", ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/aotcached");
    if (IsExecutable(candidate)) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat("no aotcached binary: AOTCACHED is unset, none beside ",
                   self.string(), ", none on PATH"));
}

absl::Status LaunchDetachedDaemon(const std::string& binary,
                                  const std::string& data_dir,
                                  absl::Duration idle_exit) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", data_dir, ": ", ec.message()));
  }
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls (the client has gRPC threads).
  std::vector<std::string> args = {
      binary, "--listen=", absl::StrCat("--data_dir=", data_dir),
      absl::StrCat("--idle_exit_seconds=", absl::ToInt64Seconds(idle_exit) > 0
                                               ? absl::ToInt64Seconds(idle_exit)
                                               : 1)};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::string log = absl::StrCat(data_dir, "/aotcached.log");

  pid_t child = fork();
  if (child < 0) return absl::ResourceExhaustedError("fork failed");
  if (child == 0) {
    // A new session: no controlling terminal, not in the client's process
    // group, so the client's Ctrl-C does not reach it.
    setsid();
    if (fork() != 0) _exit(0);  // The grandchild is reparented to init.
    int null_fd = open("/dev/null", O_RDONLY);
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    if (chdir("/") != 0) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return absl::OkStatus();
}

}  // namespace aotcache
