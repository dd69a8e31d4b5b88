#include "client/cpp/daemon_launcher.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/paths/private_dir.h"
#include "core/status_macros.h"

namespace aotcache {
namespace {

bool IsExecutable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0 &&
         std::filesystem::is_regular_file(path);
}

}  // namespace

absl::StatusOr<std::string> FindAotcached(const std::string& packaged) {
  const char* env = std::getenv("AOTCACHED");
  if (env != nullptr && *env != '\0') {
    if (IsExecutable(env)) return std::string(env);
    return absl::NotFoundError(
        absl::StrCat("AOTCACHED=", env, " is not an executable file"));
  }
  if (!packaged.empty() && IsExecutable(packaged)) return packaged;
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
  return absl::NotFoundError(absl::StrCat(
      "no aotcached binary: AOTCACHED is unset, ",
      packaged.empty() ? "" : absl::StrCat("none at ", packaged, ", "),
      "none beside ", self.string(), ", none on PATH"));
}

absl::Status LaunchDetachedDaemon(const std::string& binary,
                                  const std::string& data_dir,
                                  absl::Duration idle_exit) {
  std::error_code ec;
  // Absolute: the daemon runs from "/", the client waits on this path.
  std::string dir = std::filesystem::absolute(data_dir, ec).string();
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot resolve ", data_dir, ": ", ec.message()));
  }
  AOTCACHE_RETURN_IF_ERROR(CreatePrivateDirectories(dir));
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls (the client has gRPC threads).
  std::vector<std::string> args = {
      binary, "--listen=", absl::StrCat("--data_dir=", dir),
      absl::StrCat("--idle_exit_seconds=",
                   std::max<int64_t>(1, absl::ToInt64Seconds(idle_exit)))};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::string log = absl::StrCat(dir, "/aotcached.log");
  // The grandchild writes errno here if exec fails; a successful exec
  // closes it (close-on-exec), which the client reads as end of file.
  int exec_errors[2];
  if (pipe2(exec_errors, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError("pipe failed");
  }

  pid_t child = fork();
  if (child < 0) {
    close(exec_errors[0]);
    close(exec_errors[1]);
    return absl::ResourceExhaustedError("fork failed");
  }
  if (child == 0) {
    // A new session: no controlling terminal, not in the client's process
    // group, so the client's Ctrl-C does not reach it.
    setsid();
    pid_t grandchild = fork();
    if (grandchild != 0) _exit(grandchild < 0 ? 1 : 0);  // Reparented.
    int null_fd = open("/dev/null", O_RDONLY);
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    }
    // None of the client's other descriptors reach the daemon.
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    int error = chdir("/") == 0 ? 0 : errno;
    if (error == 0) {
      execv(argv[0], argv.data());
      error = errno;
    }
    (void)!write(exec_errors[1], &error, sizeof(error));
    _exit(127);
  }
  close(exec_errors[1]);
  int status = 0;
  waitpid(child, &status, 0);
  int error = 0;
  ssize_t n = read(exec_errors[0], &error, sizeof(error));
  close(exec_errors[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::ResourceExhaustedError("could not fork the daemon");
  }
  if (n == sizeof(error)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", binary, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace aotcache
