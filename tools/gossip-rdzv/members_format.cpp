#include "members_format.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "output/membership_json.hpp"

namespace gossip_rdzv::cli {

std::string printable(std::string text) {
  for (char& c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) c = '?';
  }
  return text;
}

namespace {

std::string last_heard_text(const MemberProgress& member) {
  if (!member.last_heard) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1fs ago",
                static_cast<double>(member.last_heard->count()) / 1000.0);
  return buffer;
}

using Row = std::array<std::string, 4>;

std::string render(const std::vector<Row>& rows) {
  std::array<std::size_t, 4> widths{};
  for (const auto& row : rows) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size())
        line += std::string(widths[column] - row[column].size() + 2, ' ');
    }
    text += line + "\n";
  }
  return text;
}

}  // namespace

std::string members_table(const std::vector<MemberProgress>& members) {
  std::vector<Row> rows{{"ENDPOINT", "HOSTNAME", "STATUS", "LAST_HEARD"}};
  for (const auto& member : members) {
    rows.push_back({printable(member.endpoint), printable(member.hostname),
                    printable(member.status), last_heard_text(member)});
  }
  return render(rows);
}

std::string members_json(const std::vector<MemberProgress>& members) {
  std::string text = "[";
  for (std::size_t index = 0; index < members.size(); ++index) {
    const auto& member = members[index];
    text += index == 0 ? "\n  " : ",\n  ";
    text += "{\"endpoint\": " + json_string(member.endpoint) +
            ", \"hostname\": " + json_string(member.hostname) +
            ", \"status\": " + json_string(member.status) + ", \"last_heard_ms\": " +
            (member.last_heard ? std::to_string(member.last_heard->count()) : "null") + "}";
  }
  text += members.empty() ? "]\n" : "\n]\n";
  return text;
}

}  // namespace gossip_rdzv::cli
