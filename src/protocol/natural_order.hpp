// Natural ("human") string order, so that node7 sorts before node66 and node100.
#pragma once

#include <string_view>

namespace gossip_rdzv::protocol {

/// Three-way natural comparison: runs of ASCII digits compare by numeric value (of any
/// length, no overflow), everything else byte by byte ("node-a" < "node-b"). Strings that
/// differ only in leading zeros ("node07" vs "node7") compare by their bytes as a last
/// resort, so the result is 0 only for identical strings: a strict total order.
/// Returns <0, 0 or >0.
int natural_compare(std::string_view a, std::string_view b);

/// natural_compare(a, b) < 0; usable as a std::sort comparator.
bool natural_less(std::string_view a, std::string_view b);

}  // namespace gossip_rdzv::protocol
