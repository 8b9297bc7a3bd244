#include "runtime/auth_report.hpp"

#include "protocol/codec.hpp"

namespace gossip_rdzv::runtime {
namespace {

using transport::key_id_text;
using transport::NoticeReason;

std::string id_or_none(const std::optional<transport::KeyId>& id) {
  return id ? "key id " + key_id_text(*id) : "no key";
}

// Who sent an unsealed message we refused: the sender a gossip message names (it could be
// anyone's claim: said so), else the connection's address.
std::string claimed_peer(const transport::AuthRefusal& refusal) {
  if (refusal.unsealed.empty()) return refusal.peer;
  const protocol::DecodeResult decoded =
      protocol::decode(refusal.unsealed.data(), refusal.unsealed.size());
  std::string sender;
  if (decoded.ok()) {
    sender = decoded.envelope().sender;
  } else if (decoded.error().header) {
    sender = decoded.error().header->sender;
  }
  if (sender.empty() || sender.size() > 300) return refusal.peer;
  return sender + " (from " + refusal.peer + ")";
}

}  // namespace

protocol::PeerRefused key_refusal(const transport::AuthRefusal& refusal,
                                  const std::optional<transport::KeyId>& ours) {
  protocol::PeerRefused out;
  out.by_us = refusal.by_us;
  out.reason = protocol::RefuseReason::key_mismatch;
  out.peer = refusal.by_us ? claimed_peer(refusal) : refusal.peer;
  const std::string mine = id_or_none(ours);
  const std::string theirs = id_or_none(refusal.key_id);
  if (refusal.by_us) {
    switch (refusal.reason) {
      case NoticeReason::key_required:
        out.detail = "it sent a message without a key; this node holds the job's key (" + mine +
                     ") and accepts only messages sealed with it";
        break;
      case NoticeReason::unknown_key:
        out.detail = "its message was sealed with " + theirs +
                     ", which this node does not hold (this node's primary is " + mine + ")";
        break;
      case NoticeReason::forged:
        out.detail = "its message under " + theirs +
                     " did not authenticate: it was forged or corrupted on the way";
        break;
      case NoticeReason::no_key_here:
        out.detail = "it seals its messages with a job key (" + theirs +
                     ") and this node was started without one";
        break;
    }
  } else {
    switch (refusal.reason) {
      case NoticeReason::key_required:
        out.detail =
            "it holds a job key (" + theirs + ") and this node sent its messages without one";
        break;
      case NoticeReason::unknown_key:
        out.detail = "it does not hold this node's key (" + mine + "); it uses " + theirs;
        break;
      case NoticeReason::forged:
        out.detail = "this node's message under " + mine +
                     " did not authenticate there: corrupted on the way, or that node holds "
                     "another key under the same id";
        break;
      case NoticeReason::no_key_here:
        out.detail =
            "it was started without a job key and this node seals its messages (" + mine + ")";
        break;
    }
  }
  return out;
}

std::string key_refusal_text(const protocol::PeerRefused& refusal) {
  const std::string what = refusal.by_us
                               ? "peer " + refusal.peer + " does not hold this job's key"
                               : "peer " + refusal.peer +
                                     " refused this node's messages: the two do not hold the "
                                     "same job key";
  return "authentication failed: " + what + " (" + refusal.detail +
         "); start every node with the same --key-file (gossip-rdzv keygen makes one)";
}

}  // namespace gossip_rdzv::runtime
