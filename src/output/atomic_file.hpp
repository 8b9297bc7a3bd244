// Replacing a file atomically, for the env and membership files other processes poll for.
#pragma once

#include <string>
#include <string_view>

namespace gossip_rdzv::output {

/// Writes `contents` to `path` so that a concurrent reader sees either the previous file or
/// the complete new one: parent directories are created, the data goes to a temporary file
/// in the same directory, is fsynced, then renamed over `path`.
/// `what` ("env file") and `option` ("--env-file") only shape the error message.
/// Throws Error(io_error) naming the path, the step that failed, strerror and the fix; no
/// temporary file is left behind.
void write_file_atomically(const std::string& path, std::string_view contents,
                           std::string_view what, std::string_view option);

}  // namespace gossip_rdzv::output
