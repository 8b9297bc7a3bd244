#include "store/store_types.hpp"

namespace gossip_rdzv::store {

std::string_view to_string(Op op) {
  switch (op) {
    case Op::set:
      return "set";
    case Op::get:
      return "get";
    case Op::add:
      return "add";
    case Op::check:
      return "check";
    case Op::compare_set:
      return "compare_set";
    case Op::delete_key:
      return "delete_key";
    case Op::num_keys:
      return "num_keys";
    case Op::wait:
      return "wait";
    case Op::stats:
      return "stats";
    case Op::ping:
      return "ping";
  }
  return "unknown";
}

std::string_view to_string(Status status) {
  switch (status) {
    case Status::ok:
      return "ok";
    case Status::timeout:
      return "timeout";
    case Status::bad_request:
      return "bad_request";
    case Status::unavailable:
      return "unavailable";
    case Status::not_ready:
      return "not_ready";
    case Status::refused:
      return "refused";
    case Status::too_large:
      return "too_large";
  }
  return "unknown";
}

std::string shape_error(const Request& request) {
  const std::size_t keys = request.keys.size();
  const std::size_t values = request.values.size();
  const std::string op(to_string(request.op));
  switch (request.op) {
    case Op::set:
      if (keys == 0 || keys != values) return op + " needs as many values as keys, at least one";
      return "";
    case Op::get:
    case Op::check:
    case Op::wait:
      if (keys == 0 || values != 0) return op + " needs at least one key and no values";
      return "";
    case Op::add:
    case Op::delete_key:
      if (keys != 1 || values != 0) return op + " needs exactly one key and no values";
      return "";
    case Op::compare_set:
      if (keys != 1 || values != 2) return op + " needs one key and two values";
      return "";
    case Op::num_keys:
    case Op::stats:
    case Op::ping:
      if (keys != 0 || values != 0) return op + " takes no keys and no values";
      return "";
  }
  return "unknown operation";
}

}  // namespace gossip_rdzv::store
