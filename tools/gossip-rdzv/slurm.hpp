// `--seed slurm`: a job's seeds, size and rank hint from the Slurm allocation it runs in.
// Every node of `srun gossip-rdzv join --seed slurm ...` computes the same seed list from
// SLURM_JOB_NODELIST, so one command line serves the whole job (examples/slurm/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gossip_rdzv::cli {

/// What `--seed slurm` stands for in a Slurm job.
struct SlurmJob {
  std::vector<std::string> seeds;        ///< "host:port" of the allocation's first hosts
  std::string nnodes;                    ///< SLURM_NNODES, as --nnodes would take it
  std::optional<std::string> node_rank;  ///< SLURM_NODEID, as --node-rank would take it
};

/// The seed word that asks for the Slurm allocation's hosts.
inline constexpr std::string_view kSlurmSeed = "slurm";

/// How many of the allocation's hosts become seeds: more than one, so the job survives its
/// first host failing to start, and few, so that every node's seed list is small.
inline constexpr std::size_t kSlurmSeedCount = 3;

/// Slurm's compact host list expanded, in order: "node[01-03,07],gpu5" is node01 node02
/// node03 node07 gpu5 (ranges keep their zero padding; several bracket groups in one name
/// multiply out, as scontrol show hostnames does). Throws std::invalid_argument naming what
/// is malformed: an unclosed '[', an empty range, a range whose end is below its start.
std::vector<std::string> expand_hostlist(std::string_view list);

/// The job from the environment `env` reads (a getenv; nullptr for unset): seeds are the
/// first kSlurmSeedCount hosts of SLURM_JOB_NODELIST (or SLURM_NODELIST) with `port`,
/// nnodes is SLURM_NNODES (or SLURM_JOB_NUM_NODES), node_rank SLURM_NODEID when set.
/// Throws std::invalid_argument with a sentence a user can act on when not inside an
/// allocation (no node list) or a variable is malformed.
SlurmJob slurm_job(const std::function<const char*(const char*)>& env, std::uint16_t port);

}  // namespace gossip_rdzv::cli
