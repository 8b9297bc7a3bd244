#include "quorum_base.hpp"

#include <algorithm>
#include <iterator>

#include "intern_pool.hpp"

namespace gossip_rdzv::protocol {
namespace {

auto first_at(const std::vector<MemberKey>& members, const std::string& endpoint) {
  return std::lower_bound(
      members.begin(), members.end(), endpoint,
      [](const MemberKey& key, const std::string& text) { return key.endpoint < text; });
}

}  // namespace

bool has_member_at(const std::vector<MemberKey>& members, const std::string& endpoint) {
  auto it = first_at(members, endpoint);
  return it != members.end() && it->endpoint == endpoint;
}

bool merge_witnesses(std::vector<std::string>& into, const std::vector<std::string>& other) {
  if (std::includes(into.begin(), into.end(), other.begin(), other.end())) return false;
  std::vector<std::string> merged;
  std::set_union(into.begin(), into.end(), other.begin(), other.end(), std::back_inserter(merged));
  into = std::move(merged);
  return true;
}

QuorumBase::QuorumBase(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {
  std::sort(endpoints_.begin(), endpoints_.end());
  endpoints_.erase(std::unique(endpoints_.begin(), endpoints_.end()), endpoints_.end());
  digest_ = kFnvOffset;
  for (const auto& endpoint : endpoints_) {
    digest_ = fnv1a(digest_, endpoint.data(), endpoint.size());
    const char separator = 0;
    digest_ = fnv1a(digest_, &separator, 1);
  }
}

bool QuorumBase::contains(const std::string& endpoint) const {
  return std::binary_search(endpoints_.begin(), endpoints_.end(), endpoint);
}

bool QuorumBase::counts(const std::string& endpoint, const std::vector<MemberKey>& members,
                        const bits::Bytes& voted, const std::vector<std::string>& witnesses) {
  if (std::binary_search(witnesses.begin(), witnesses.end(), endpoint)) return true;
  // A view holds at most one process per endpoint that can vote (a restarted one is a new
  // member key), but an old process of a restarted seed may sit next to its new one.
  for (auto it = first_at(members, endpoint); it != members.end() && it->endpoint == endpoint;
       ++it) {
    if (bits::get(voted, static_cast<std::size_t>(it - members.begin()))) return true;
  }
  return false;
}

std::size_t QuorumBase::won(const std::vector<MemberKey>& members, const bits::Bytes& voted,
                            const std::vector<std::string>& witnesses) const {
  return static_cast<std::size_t>(std::count_if(
      endpoints_.begin(), endpoints_.end(),
      [&](const std::string& endpoint) { return counts(endpoint, members, voted, witnesses); }));
}

std::vector<std::string> QuorumBase::missing(const std::vector<MemberKey>& members,
                                             const bits::Bytes& voted,
                                             const std::vector<std::string>& witnesses) const {
  std::vector<std::string> left;
  for (const auto& endpoint : endpoints_) {
    if (!counts(endpoint, members, voted, witnesses)) left.push_back(endpoint);
  }
  return left;
}

bool QuorumBase::reached(const std::vector<MemberKey>& members, const bits::Bytes& voted,
                         const std::vector<std::string>& witnesses) const {
  return empty() || 2 * won(members, voted, witnesses) > endpoints_.size();
}

bool QuorumBase::can_win(const std::vector<MemberKey>& members, const bits::Bytes& fenced,
                         const std::function<bool(const std::string&)>& is_member_process) const {
  std::size_t possible = 0;
  for (const auto& endpoint : endpoints_) {
    if (has_member_at(members, endpoint)) {
      possible += may_vote(endpoint, members, fenced) ? 1 : 0;
    } else if (!is_member_process(endpoint)) {
      ++possible;
    }
  }
  return empty() || 2 * possible > endpoints_.size();
}

bool QuorumBase::may_vote(const std::string& endpoint, const std::vector<MemberKey>& members,
                          const bits::Bytes& fenced) {
  for (auto it = first_at(members, endpoint); it != members.end() && it->endpoint == endpoint;
       ++it) {
    if (!bits::get(fenced, static_cast<std::size_t>(it - members.begin()))) return true;
  }
  return false;
}

std::vector<std::string> QuorumBase::to_ask(const std::vector<MemberKey>& members,
                                            const std::vector<std::string>& witnesses) const {
  std::vector<std::string> ask;
  for (const auto& endpoint : endpoints_) {
    if (has_member_at(members, endpoint)) continue;  // a member seed votes for itself
    if (std::binary_search(witnesses.begin(), witnesses.end(), endpoint)) continue;
    ask.push_back(endpoint);
  }
  return ask;
}

}  // namespace gossip_rdzv::protocol
