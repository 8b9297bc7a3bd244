// Packets between simulated processes: encoded and routed through the seeded network, queued
// for an endpoint where nothing listens yet, delivered to the core at the other end.
#include <algorithm>
#include <string>

#include "sim/simulator_impl.hpp"

namespace gossip_rdzv::sim {

using detail::seconds_text;
using detail::type_index;

void Simulator::Impl::send(std::uint32_t from, protocol::Outgoing out) {
  auto packet = std::make_shared<Packet>();
  packet->from_slot = from;
  packet->from_life = slots[from].life;
  packet->type = protocol::message_type(out.msg.body);
  if (options.codec == CodecMode::off) {
    packet->envelope = std::move(out.msg);
  } else {
    std::vector<std::uint8_t> bytes = protocol::encode(out.msg);
    packet->size = bytes.size();
    if (options.codec == CodecMode::full)
      packet->bytes = std::move(bytes);
    else
      packet->envelope = std::move(out.msg);
  }
  auto& traffic = stats.traffic[from];
  ++traffic.messages_sent;
  ++traffic.sent_by_type[type_index(packet->type)];
  traffic.bytes_sent += packet->size;
  if (from == seed_slot && packet->type == protocol::MessageType::join_reply) {
    seed_join_reply_bytes += packet->size;
    ++seed_join_replies;
  }
  auto it = slot_of.find(out.to);
  if (it == slot_of.end() || !slots[it->second].core) {
    // Nobody will ever listen there (unknown, or exited): a queue that would never drain
    // is counted as lost at once.
    const bool lost = it == slot_of.end() || slots[it->second].exited;
    if (tracing(2))
      trace(2, "slot " + std::to_string(from) + " -> " + out.to + " " +
                   std::string(protocol::to_string(packet->type)) +
                   (lost ? " undeliverable" : " queued: nobody listens"));
    if (lost)
      ++stats.undeliverable;
    else
      park(it->second, std::move(packet));
    return;
  }
  const std::uint32_t to = it->second;
  const auto deliveries = network.route(from, to, now);
  if (tracing(2))
    trace(2, "slot " + std::to_string(from) + " -> " + std::to_string(to) + " " +
                 std::string(protocol::to_string(packet->type)) + " " +
                 std::to_string(packet->size) + " B" + (deliveries.empty() ? " dropped" : ""));
  std::shared_ptr<const Packet> shared = std::move(packet);
  for (Time at : deliveries) push({at, 0, EventKind::deliver, to, slots[to].life, shared});
}

void Simulator::Impl::deliver(const QueuedEvent& event) {
  SlotState& slot = slots[event.slot];
  const Packet& packet = *event.packet;
  // A crash loses the packets in flight from it (its queues die with it) and to it.
  if (!slot.core || slot.life != event.life || life_crashed[packet.from_life]) {
    ++stats.undeliverable;
    return;
  }
  if (event.sent_at >= Time(0) &&
      network.drop_if_separated(packet.from_slot, event.slot, event.sent_at))
    return;
  if (tracing(2))
    trace(2, "deliver " + std::to_string(packet.from_slot) + " -> " + std::to_string(event.slot) +
                 " " + std::string(protocol::to_string(packet.type)) + " " +
                 std::to_string(packet.size) + " B");
  slot.connected = true;
  if (slots[packet.from_slot].life == packet.from_life) slots[packet.from_slot].connected = true;
  auto& traffic = stats.traffic[event.slot];
  ++traffic.messages_received;
  ++traffic.received_by_type[type_index(packet.type)];
  traffic.bytes_received += packet.size;
  ++stats.packets_delivered;
  if (packet.envelope) {
    slot.core->on_message(now, *packet.envelope);
  } else {
    protocol::DecodeResult decoded = protocol::decode(packet.bytes);
    if (!decoded.ok()) {
      // One report per kind of refusal is enough; the count says how widespread it is.
      if (++codec_refusals > 3) return;
      checker.fail(FailureKind::harness, now,
                   "codec refused bytes the core of slot " + std::to_string(packet.from_slot) +
                       " sent (" + std::string(protocol::to_string(packet.type)) +
                       "): " + protocol::describe(decoded.error()));
      return;
    }
    slot.core->on_message(now, decoded.envelope());
  }
  after_step(event.slot);
}

/// Queues a packet for an endpoint where no process runs (see ParkedFlow).
void Simulator::Impl::park(std::uint32_t to, std::shared_ptr<const Packet> packet) {
  auto& flows = slots[to].parked;
  auto flow = std::find_if(flows.begin(), flows.end(),
                           [&](const ParkedFlow& f) { return f.from_life == packet->from_life; });
  if (flow == flows.end())
    flow = flows.insert(flows.end(), ParkedFlow{packet->from_slot, packet->from_life, now, {}});
  if (flow->packets.size() >= scenario.link.queue_limit) {
    ++stats.undeliverable;  // the transport's send fails at the high-water mark
    return;
  }
  ++stats.queued_for_listener;
  flow->packets.push_back(std::move(packet));
}

/// The senders that queued packets for this endpoint connect at their next reconnect
/// attempt and deliver the queue in order; a sender that crashed or exited took its queue
/// with it.
void Simulator::Impl::release_parked(std::uint32_t index) {
  SlotState& slot = slots[index];
  std::vector<ParkedFlow> flows = std::move(slot.parked);
  slot.parked.clear();
  for (const ParkedFlow& flow : flows) {
    const SlotState& sender = slots[flow.from_slot];
    if (sender.life != flow.from_life || !sender.core) {  // crashed, exited or restarted
      stats.undeliverable += flow.packets.size();
      continue;
    }
    const Time connected = reconnect_time(scenario.link, flow.since, now);
    for (const auto& packet : flow.packets) {
      ++stats.released_to_listener;
      for (Time at : network.route(flow.from_slot, index, connected))
        push({at, 0, EventKind::deliver, index, slot.life, packet, connected});
    }
    if (tracing(1))
      trace(1, "slot " + std::to_string(flow.from_slot) + " connects to slot " +
                   std::to_string(index) + " at " + seconds_text(connected) + ": " +
                   std::to_string(flow.packets.size()) + " queued packets");
  }
}
}  // namespace gossip_rdzv::sim
