#include "gossip_rdzv/env.hpp"

#include <string_view>

#include "gossip_rdzv/error.hpp"
#include "output/atomic_file.hpp"

namespace gossip_rdzv {
namespace {

constexpr std::string_view kLocalRankPlaceholder = "{local_rank}";
// torchrun's default --role.
constexpr std::string_view kRoleName = "default";

const NodeEntry& my_node(const Assignment& a) {
  if (a.my_node_rank >= a.nodes.size()) {
    throw Error(ErrorCode::usage, "assignment has my_node_rank " + std::to_string(a.my_node_rank) +
                                      " but only " + std::to_string(a.nodes.size()) +
                                      " nodes; pass an assignment computed by gossip-rdzv");
  }
  return a.nodes[a.my_node_rank];
}

// Variables shared by every process of the node; `local_rank` adds the per-process ones.
EnvVars build(const Assignment& a, std::optional<std::uint32_t> local_rank,
              const std::optional<std::string>& ifname) {
  const NodeEntry& me = my_node(a);
  const auto num = [](auto v) { return std::to_string(v); };
  std::optional<std::string> rank;
  if (local_rank) rank = num(me.rank_offset + *local_rank);
  EnvVars vars;
  vars.emplace_back("MASTER_ADDR", a.master_addr);
  vars.emplace_back("MASTER_PORT", num(a.master_port));
  vars.emplace_back("WORLD_SIZE", num(a.world_size));
  if (rank) vars.emplace_back("RANK", *rank);
  if (local_rank) vars.emplace_back("LOCAL_RANK", num(*local_rank));
  vars.emplace_back("LOCAL_WORLD_SIZE", num(me.nproc));
  vars.emplace_back("GROUP_RANK", num(me.node_rank));
  vars.emplace_back("GROUP_WORLD_SIZE", num(a.nnodes()));
  vars.emplace_back("NODE_RANK", num(me.node_rank));
  vars.emplace_back("NNODES", num(a.nnodes()));
  vars.emplace_back("ROLE_NAME", std::string(kRoleName));
  // With a single role, torchrun's role rank and size are the global ones.
  if (rank) vars.emplace_back("ROLE_RANK", *rank);
  vars.emplace_back("ROLE_WORLD_SIZE", num(a.world_size));
  vars.emplace_back("TORCHELASTIC_RUN_ID", a.run_id);
  vars.emplace_back("TORCHELASTIC_RESTART_COUNT", num(a.round));
  if (ifname) {
    vars.emplace_back("GLOO_SOCKET_IFNAME", *ifname);
    // NCCL picks its socket interface by name prefix ("eth0" also takes "eth0.100"); a
    // leading '=' asks for exactly this one (NCCL's documented syntax).
    vars.emplace_back("NCCL_SOCKET_IFNAME", "=" + *ifname);
  }
  return vars;
}

bool is_shell_name(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool needs_quotes(std::string_view value) {
  // '=' is safe after the name's: a shell, systemd and docker all split at the first one.
  constexpr std::string_view kSafePunctuation = "_./:@%+,-=";
  for (const char c : value) {
    const bool safe = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      kSafePunctuation.find(c) != std::string_view::npos;
    if (!safe) return true;
  }
  return false;
}

// POSIX single quotes keep everything literal except the quote itself, which is closed,
// escaped and reopened: it's -> 'it'\''s'.
std::string shell_quote(std::string_view value) {
  std::string out = "'";
  for (const char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string replace_all(std::string text, std::string_view from, const std::string& to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

}  // namespace

EnvVars torch_env(const Assignment& assignment, std::uint32_t local_rank,
                  const std::optional<std::string>& ifname) {
  const NodeEntry& me = my_node(assignment);
  if (local_rank >= me.nproc) {
    throw Error(ErrorCode::usage, "local rank " + std::to_string(local_rank) +
                                      " is out of range: this node runs " +
                                      std::to_string(me.nproc) + " processes (local ranks 0.." +
                                      std::to_string(me.nproc == 0 ? 0 : me.nproc - 1) + ")");
  }
  return build(assignment, local_rank, ifname);
}

EnvVars node_env(const Assignment& assignment, const std::optional<std::string>& ifname) {
  // With one process per node its ranks are known, and DESIGN.md promises them.
  if (my_node(assignment).nproc == 1) return torch_env(assignment, 0, ifname);
  return build(assignment, std::nullopt, ifname);
}

std::string format_env(const EnvVars& vars, EnvFormat format) {
  std::string out;
  for (const auto& [name, value] : vars) {
    if (!is_shell_name(name)) {
      throw Error(ErrorCode::internal, "env variable name '" + name + "' is not a shell name");
    }
    if (format == EnvFormat::export_) out += "export ";
    out += name;
    out += '=';
    out += needs_quotes(value) ? shell_quote(value) : value;
    out += '\n';
  }
  return out;
}

std::vector<std::string> write_env_files(const std::string& path_template,
                                         const Assignment& assignment, EnvFormat format,
                                         const std::optional<std::string>& ifname) {
  if (path_template.empty()) {
    throw Error(ErrorCode::usage, "the env file path is empty; pass a path to --env-file");
  }
  if (path_template.find(kLocalRankPlaceholder) == std::string::npos) {
    output::write_file_atomically(path_template, format_env(node_env(assignment, ifname), format),
                                  "env file", "--env-file");
    return {path_template};
  }
  const auto paths = env_file_paths(path_template, my_node(assignment).nproc);
  for (std::uint32_t local_rank = 0; local_rank < paths.size(); ++local_rank) {
    output::write_file_atomically(paths[local_rank],
                                  format_env(torch_env(assignment, local_rank, ifname), format),
                                  "env file", "--env-file");
  }
  return paths;
}

std::vector<std::string> env_file_paths(const std::string& path_template, std::uint32_t nproc) {
  if (path_template.find(kLocalRankPlaceholder) == std::string::npos) return {path_template};
  std::vector<std::string> paths;
  for (std::uint32_t local_rank = 0; local_rank < nproc; ++local_rank) {
    paths.push_back(replace_all(path_template, kLocalRankPlaceholder, std::to_string(local_rank)));
  }
  return paths;
}

}  // namespace gossip_rdzv
