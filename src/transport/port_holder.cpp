#include "transport/port_holder.hpp"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

namespace gossip_rdzv::transport {
namespace {

namespace fs = std::filesystem;

// /proc/net/tcp state column: 0A is TCP_LISTEN (include/net/tcp_states.h).
constexpr std::string_view kListenState = "0A";

// Columns of /proc/net/tcp: sl local_address rem_address st tx:rx tr:when retrnsmt uid
// timeout inode ...; local_address is "HEXADDR:HEXPORT".
struct SocketLine {
  std::string local_address;
  std::string state;
  std::string inode;
};

std::optional<SocketLine> parse_socket_line(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> columns{std::istream_iterator<std::string>(in),
                                   std::istream_iterator<std::string>()};
  if (columns.size() < 10) return std::nullopt;
  return SocketLine{columns[1], columns[3], columns[9]};
}

std::optional<std::uint16_t> hex_port(const std::string& local_address) {
  const auto colon = local_address.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  unsigned value = 0;
  const char* first = local_address.data() + colon + 1;
  const char* last = local_address.data() + local_address.size();
  const auto [ptr, ec] = std::from_chars(first, last, value, 16);
  if (ec != std::errc() || ptr != last || value > 0xffff) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

void collect_listen_inodes(const char* table, std::uint16_t port, std::set<std::string>& out) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const auto socket = parse_socket_line(line);
    if (!socket || socket->state != kListenState || socket->inode == "0") continue;
    if (hex_port(socket->local_address) == port) out.insert(socket->inode);
  }
}

bool holds_any_socket(const fs::path& fd_dir, const std::set<std::string>& socket_links) {
  std::error_code ec;
  for (fs::directory_iterator it(fd_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code link_ec;
    const fs::path target = fs::read_symlink(it->path(), link_ec);
    if (!link_ec && socket_links.count(target.string()) > 0) return true;
  }
  return false;
}

std::string read_command_line(const fs::path& pid_dir) {
  std::ifstream in(pid_dir / "cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  return raw;
}

std::optional<int> parse_pid(const std::string& name) {
  int pid = 0;
  const auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || ptr != name.data() + name.size()) return std::nullopt;
  return pid;
}

}  // namespace

std::optional<PortHolder> find_port_holder(std::uint16_t port) {
  std::set<std::string> inodes;
  collect_listen_inodes("/proc/net/tcp", port, inodes);
  collect_listen_inodes("/proc/net/tcp6", port, inodes);
  if (inodes.empty()) return std::nullopt;
  std::set<std::string> socket_links;
  for (const auto& inode : inodes) socket_links.insert("socket:[" + inode + "]");

  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const auto pid = parse_pid(it->path().filename().string());
    if (!pid || !holds_any_socket(it->path() / "fd", socket_links)) continue;
    return PortHolder{*pid, read_command_line(it->path())};
  }
  return std::nullopt;
}

std::string describe_port_holder(std::uint16_t port) {
  return describe(find_port_holder(port));
}

std::string describe(const std::optional<PortHolder>& holder) {
  if (!holder) return "by another process (not visible from here)";
  std::string text = "by pid " + std::to_string(holder->pid);
  if (!holder->command_line.empty()) text += " (" + holder->command_line + ")";
  return text;
}

}  // namespace gossip_rdzv::transport
