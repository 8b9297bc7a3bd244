#include "output/membership_json.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "output/atomic_file.hpp"

namespace gossip_rdzv {
namespace {

// Length of the valid UTF-8 sequence starting at text[pos], or 0 if it is not one
// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view text, std::size_t pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  std::size_t len = 0;
  unsigned char min_second = 0x80;
  unsigned char max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong
    if (lead == 0xED) max_second = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong
    if (lead == 0xF4) max_second = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (pos + len > text.size()) return 0;
  if (byte(pos + 1) < min_second || byte(pos + 1) > max_second) return 0;
  for (std::size_t i = 2; i < len; ++i) {
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF) return 0;
  }
  return len;
}

void append_escaped_ascii(std::string& out, unsigned char c) {
  if (c == '"' || c == '\\') {
    out += '\\';
    out += static_cast<char>(c);
  } else if (c < 0x20) {
    std::array<char, 8> buf{};
    std::snprintf(buf.data(), buf.size(), "\\u%04x", static_cast<unsigned>(c));
    out += buf.data();
  } else {
    out += static_cast<char>(c);
  }
}

// Control characters (and DEL) would let a peer's host name drive the terminal.
std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = '?';
  }
  return out;
}

std::string rank_range(const NodeEntry& node) {
  if (node.nproc <= 1) return std::to_string(node.rank_offset);
  return std::to_string(node.rank_offset) + "-" + std::to_string(node.rank_offset + node.nproc - 1);
}

std::string node_json(const NodeEntry& n) {
  return "{\"node_rank\": " + std::to_string(n.node_rank) +
         ", \"rank_offset\": " + std::to_string(n.rank_offset) +
         ", \"nproc\": " + std::to_string(n.nproc) + ", \"host\": " + json_string(n.host) +
         ", \"endpoint\": " + json_string(n.endpoint) +
         ", \"hostname\": " + json_string(n.hostname) +
         ", \"node_id\": " + json_string(std::to_string(n.node_id)) +
         ", \"generation\": " + std::to_string(n.generation) + "}";
}

using Row = std::array<std::string, 6>;

std::string format_rows(const std::vector<Row>& rows) {
  constexpr std::size_t columns = std::tuple_size_v<Row>;
  std::array<std::size_t, columns> width{};
  for (const Row& row : rows) {
    for (std::size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < columns; ++c) {
      line += row[c];
      if (c + 1 < columns) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (std::size_t pos = 0; pos < text.size();) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      append_escaped_ascii(out, c);
      ++pos;
    } else if (const std::size_t len = utf8_length(text, pos); len > 0) {
      out.append(text.substr(pos, len));
      pos += len;
    } else {
      out += "\\ufffd";
      ++pos;
    }
  }
  return out + "\"";
}

std::string membership_json(const Assignment& a) {
  std::string out = "{\n";
  out += "  \"run_id\": " + json_string(a.run_id) + ",\n";
  out += "  \"round\": " + std::to_string(a.round) + ",\n";
  out += "  \"world_size\": " + std::to_string(a.world_size) + ",\n";
  out += "  \"master_addr\": " + json_string(a.master_addr) + ",\n";
  out += "  \"master_port\": " + std::to_string(a.master_port) + ",\n";
  out += "  \"nnodes\": " + std::to_string(a.nnodes()) + ",\n";
  out += "  \"nodes\": [";
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    out += (i == 0 ? "\n    " : ",\n    ") + node_json(a.nodes[i]);
  }
  out += a.nodes.empty() ? "]\n" : "\n  ]\n";
  return out + "}\n";
}

std::string assignment_table(const Assignment& a) {
  std::vector<Row> rows{{"NODE_RANK", "RANKS", "HOST", "ENDPOINT", "HOSTNAME", "NPROC"}};
  for (const NodeEntry& n : a.nodes) {
    rows.push_back({std::to_string(n.node_rank), rank_range(n), printable(n.host),
                    printable(n.endpoint), printable(n.hostname), std::to_string(n.nproc)});
  }
  return format_rows(rows);
}

void write_membership_file(const std::string& path, const Assignment& assignment) {
  output::write_file_atomically(path, membership_json(assignment), "membership file",
                                "--membership-file");
}

}  // namespace gossip_rdzv
