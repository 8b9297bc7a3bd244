#include "runtime/store_sidecar.hpp"

#include <utility>
#include <vector>

#include "store/store_codec.hpp"
#include "store/store_service.hpp"

namespace gossip_rdzv::runtime {
namespace {

/// Serves the store on the gossip socket: the runtime hands it the bytes that carry the
/// store's magic and the membership's changes, and sends what the service wants sent.
class StoreSidecar : public Sidecar {
 public:
  StoreSidecar(const std::string& endpoint, const std::string& run_id)
      : service_(store::ServiceOptions{endpoint, run_id}), log_(logger()) {}

  bool claims(const transport::Bytes& bytes) const override {
    return store::is_store_message(bytes.data(), bytes.size());
  }
  void on_bytes(protocol::Time now, const transport::Bytes& bytes) override {
    service_.on_bytes(now, bytes.data(), bytes.size());
  }
  void on_committed(protocol::Time now, const Assignment& assignment) override {
    service_.on_committed(now, assignment);
  }
  void on_member_dead(const std::string& endpoint) override { service_.on_member_dead(endpoint); }
  void on_member_alive(const std::string& endpoint) override { service_.on_member_alive(endpoint); }
  void on_tick(protocol::Time now) override {
    service_.on_tick(now);
    while (auto warning = service_.poll_warning()) log_->warn("{}", printable(*warning));
  }
  std::vector<Send> take_sends() override {
    std::vector<Send> sends;
    while (auto out = service_.poll_send()) sends.push_back(Send{out->to, std::move(out->bytes)});
    return sends;
  }
  std::optional<protocol::Time> next_wakeup() const override { return service_.next_wakeup(); }

 private:
  store::StoreService service_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

std::unique_ptr<Sidecar> make_store_sidecar(const std::string& endpoint,
                                            const std::string& run_id) {
  return std::make_unique<StoreSidecar>(endpoint, run_id);
}

}  // namespace gossip_rdzv::runtime
