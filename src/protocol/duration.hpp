// Durations as users type them on the command line: "500ms", "30s", "2m", "1h", "1.5s";
// a plain number is seconds ("30" = 30 s), as in torchrun's --rdzv-conf timeouts.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace gossip_rdzv::protocol {

/// Longest accepted duration: about 31 years, far beyond any timeout and far from overflow.
inline constexpr std::chrono::milliseconds kMaxDuration{1'000'000'000'000};

/// Parses a non-negative duration. On failure returns nullopt and, if `error` is not null,
/// a sentence naming the problem ("unknown unit 'd' in '2d': use ms, s, m or h").
/// A value finer than a millisecond ("0.0001s") is refused rather than rounded.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text, std::string* error);

}  // namespace gossip_rdzv::protocol
