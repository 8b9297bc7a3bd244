#include "slurm.hpp"

#include <stdexcept>

namespace gossip_rdzv::cli {
namespace {

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

[[noreturn]] void malformed(std::string_view list, const std::string& why) {
  throw std::invalid_argument("Slurm host list '" + std::string(list) + "': " + why);
}

// "01-03" or "7" as strings, zero padding kept at the width of the range's start.
std::vector<std::string> expand_range(std::string_view list, std::string_view range) {
  const std::size_t dash = range.find('-');
  const std::string_view first = range.substr(0, dash);
  const std::string_view last = dash == std::string_view::npos ? first : range.substr(dash + 1);
  if (!all_digits(first) || !all_digits(last) || first.size() > 9 || last.size() > 9) {
    malformed(list, "'" + std::string(range) + "' is not a number or a range like 01-03");
  }
  const unsigned long from = std::stoul(std::string(first));
  const unsigned long to = std::stoul(std::string(last));
  if (to < from) malformed(list, "range '" + std::string(range) + "' ends below its start");
  if (to - from >= 100000) malformed(list, "range '" + std::string(range) + "' is too long");
  std::vector<std::string> out;
  for (unsigned long n = from; n <= to; ++n) {
    std::string digits = std::to_string(n);
    if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
    out.push_back(std::move(digits));
  }
  return out;
}

// One host expression, e.g. "rack[1-2]-node[01-03]", multiplied out left to right.
std::vector<std::string> expand_name(std::string_view list, std::string_view name) {
  std::vector<std::string> names{""};
  std::size_t pos = 0;
  while (pos < name.size()) {
    const std::size_t open = name.find('[', pos);
    const std::string_view literal = name.substr(pos, open - pos);
    for (auto& n : names) n += literal;
    if (open == std::string_view::npos) break;
    const std::size_t close = name.find(']', open);
    if (close == std::string_view::npos) malformed(list, "'[' without ']'");
    std::vector<std::string> suffixes;
    std::string_view inside = name.substr(open + 1, close - open - 1);
    if (inside.empty()) malformed(list, "empty brackets");
    while (!inside.empty()) {
      const std::size_t comma = inside.find(',');
      for (auto& s : expand_range(list, inside.substr(0, comma))) suffixes.push_back(s);
      inside = comma == std::string_view::npos ? std::string_view{} : inside.substr(comma + 1);
    }
    std::vector<std::string> product;
    for (const auto& n : names) {
      for (const auto& s : suffixes) product.push_back(n + s);
    }
    names = std::move(product);
    pos = close + 1;
  }
  return names;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> hosts;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) malformed(list, "']' without '['");
    if (c != ',' || depth > 0) continue;
    const std::string_view name = list.substr(start, i - start);
    if (name.empty()) malformed(list, "empty host name");
    for (auto& host : expand_name(list, name)) hosts.push_back(std::move(host));
    start = i + 1;
  }
  if (depth != 0) malformed(list, "'[' without ']'");
  return hosts;
}

SlurmJob slurm_job(const std::function<const char*(const char*)>& env, std::uint16_t port) {
  const auto get = [&](const char* name) -> std::optional<std::string> {
    const char* value = env(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
  auto nodelist = get("SLURM_JOB_NODELIST");
  if (!nodelist) nodelist = get("SLURM_NODELIST");
  if (!nodelist) {
    throw std::invalid_argument(
        "--seed slurm: SLURM_JOB_NODELIST is not set, so this is not running inside a Slurm "
        "allocation: run it under srun or sbatch, or give --seed HOST:PORT");
  }
  const std::vector<std::string> hosts = expand_hostlist(*nodelist);
  SlurmJob job;
  for (std::size_t i = 0; i < hosts.size() && i < kSlurmSeedCount; ++i) {
    job.seeds.push_back(hosts[i] + ":" + std::to_string(port));
  }
  auto nnodes = get("SLURM_NNODES");
  if (!nnodes) nnodes = get("SLURM_JOB_NUM_NODES");
  job.nnodes = nnodes ? *nnodes : std::to_string(hosts.size());
  if (!all_digits(job.nnodes)) {
    throw std::invalid_argument("--seed slurm: SLURM_NNODES '" + job.nnodes +
                                "' is not a node count");
  }
  job.node_rank = get("SLURM_NODEID");
  if (job.node_rank && !all_digits(*job.node_rank)) {
    throw std::invalid_argument("--seed slurm: SLURM_NODEID '" + *job.node_rank +
                                "' is not a node index");
  }
  return job;
}

}  // namespace gossip_rdzv::cli
