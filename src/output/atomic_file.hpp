// Replacing a file atomically, for the env and membership files other processes poll for.
#pragma once

#include <string>
#include <string_view>

namespace gossip_rdzv::output {

/// Writes `contents` to `path` so that a concurrent reader sees either the previous file or
/// the complete new one: parent directories are created, the data goes to a temporary file
/// in the same directory, is fsynced, then renamed over the target.
/// The target is `path`, or when `path` is a symbolic link the regular file it points to
/// (the link stays, its file is replaced). Anything else - a device such as /dev/full, a
/// FIFO, a directory, a socket, a dangling link - is refused: replacing it with a regular
/// file would destroy it.
/// The new file gets `mode` (less the umask): the temporary file is created so, never
/// wider, which keeps a secret (a key file: 0600) unreadable to others at every moment.
/// `what` ("env file") and `option` ("--env-file") only shape the error message.
/// Throws Error(io_error) naming the path, the step that failed, strerror and the fix; no
/// temporary file is left behind.
void write_file_atomically(const std::string& path, std::string_view contents,
                           std::string_view what, std::string_view option, unsigned mode = 0644);

/// Creates `path` as a new file holding `contents`, with `mode` (less the umask), fsynced. It
/// never opens what already exists or follows a link at `path` (O_EXCL | O_NOFOLLOW), so a
/// link planted there cannot lead the data elsewhere. Parent directories are created.
/// Returns false, writing nothing, when something exists at `path`; otherwise throws as
/// write_file_atomically does, leaving nothing behind.
bool write_new_file(const std::string& path, std::string_view contents, std::string_view what,
                    std::string_view option, unsigned mode = 0644);

/// Checks, before any work is done, that write_file_atomically(path, ...) can succeed as far
/// as can be known without writing: the target is absent or a regular file (through a
/// symbolic link, as above), and its directory exists or can be created and is writable by
/// this process. Creates missing parent directories, nothing else. Throws as
/// write_file_atomically does.
void check_output_path(const std::string& path, std::string_view what, std::string_view option);

}  // namespace gossip_rdzv::output
