#include "output/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv::output {
namespace {

namespace fs = std::filesystem;

struct Context {
  const std::string& path;
  std::string_view what;
  std::string_view option;
};

[[noreturn]] void fail(const Context& ctx, const std::string& step, int err) {
  throw Error(ErrorCode::io_error, "cannot write " + std::string(ctx.what) + " '" + ctx.path +
                                       "': " + step + ": " + std::strerror(err) +
                                       "; make sure the directory exists (or can be created) " +
                                       "and is writable by this user, or choose another " +
                                       std::string(ctx.option) + " path");
}

// Unique within the process (counter) and across processes (pid); O_EXCL guards the rest.
std::string temp_name(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  fs::path tmp = target;
  tmp.replace_filename("." + target.filename().string() + ".tmp." + std::to_string(getpid()) + "." +
                       std::to_string(counter.fetch_add(1)));
  return tmp.string();
}

void write_all(const Context& ctx, int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ctx, "writing", errno);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Creates `file` (O_EXCL, with `flags`), writes and fsyncs it; on error removes it before
// throwing. Returns false when `file` exists and `exists_ok` says that is no error.
bool write_new(const Context& ctx, const std::string& file, std::string_view contents,
               unsigned mode, int flags, const char* creating, bool exists_ok) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | flags, mode);
  if (fd < 0 && errno == EEXIST && exists_ok) return false;
  if (fd < 0) fail(ctx, creating, errno);
  try {
    write_all(ctx, fd, contents);
    if (::fsync(fd) != 0) fail(ctx, "flushing to disk", errno);
  } catch (...) {
    ::close(fd);
    ::unlink(file.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(file.c_str());
    fail(ctx, "closing", err);
  }
  return true;
}

[[noreturn]] void refuse(const Context& ctx, const std::string& why) {
  throw Error(ErrorCode::io_error, "cannot write " + std::string(ctx.what) + " '" + ctx.path +
                                       "': " + why + "; give " + std::string(ctx.option) +
                                       " the path of a regular file (or of one to create)");
}

std::string kind_of(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// The file to replace: `path`, or the regular file a symbolic link at `path` leads to.
fs::path output_target(const Context& ctx) {
  const fs::path path(ctx.path);
  if (ctx.path.empty() || !path.has_filename()) fail(ctx, "not a file name", EINVAL);
  std::error_code ec;
  const fs::file_status own = fs::symlink_status(path, ec);
  // Missing, or a parent that is no directory: creating the parents reports the latter.
  if (ec && (ec.value() == ENOENT || ec.value() == ENOTDIR)) return path;
  if (ec) fail(ctx, "looking at it", ec.value());
  if (own.type() == fs::file_type::not_found) return path;
  if (own.type() == fs::file_type::regular) return path;
  if (own.type() != fs::file_type::symlink) refuse(ctx, "it is " + kind_of(own.type()));
  const fs::path target = fs::canonical(path, ec);
  if (ec) refuse(ctx, "it is a symbolic link that leads nowhere (" + ec.message() + ")");
  const fs::file_type type = fs::status(target, ec).type();
  if (type != fs::file_type::regular) {
    refuse(ctx, "it is a symbolic link to '" + target.string() + "', which is " + kind_of(type));
  }
  return target;
}

void create_parent(const Context& ctx, const fs::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(ctx, "creating directory '" + dir.string() + "'", ec.value());
}

// Makes the rename itself durable; a failure here loses nothing already visible, so it is
// ignored (some file systems refuse to fsync directories).
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents,
                           std::string_view what, std::string_view option, unsigned mode) {
  const Context ctx{path, what, option};
  const fs::path target = output_target(ctx);
  const fs::path dir = target.parent_path();
  create_parent(ctx, dir);
  const std::string tmp = temp_name(target);
  write_new(ctx, tmp, contents, mode, 0, "creating a temporary file in its directory", false);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(ctx, "renaming the temporary file into place", err);
  }
  sync_directory(dir);
}

bool write_new_file(const std::string& path, std::string_view contents, std::string_view what,
                    std::string_view option, unsigned mode) {
  const Context ctx{path, what, option};
  const fs::path file(path);
  if (path.empty() || !file.has_filename()) fail(ctx, "not a file name", EINVAL);
  create_parent(ctx, file.parent_path());
  if (!write_new(ctx, path, contents, mode, O_NOFOLLOW, "creating it", true)) return false;
  sync_directory(file.parent_path());
  return true;
}

void check_output_path(const std::string& path, std::string_view what, std::string_view option) {
  const Context ctx{path, what, option};
  const fs::path dir = output_target(ctx).parent_path();
  create_parent(ctx, dir);
  if (::access(dir.empty() ? "." : dir.c_str(), W_OK | X_OK) != 0) {
    fail(ctx, "checking that its directory is writable", errno);
  }
}

}  // namespace gossip_rdzv::output
