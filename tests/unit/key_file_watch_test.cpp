// KeyFileWatch: a changed key file is re-read, at most once per interval; a broken one is
// reported and does not replace the keys in use.
#include "transport/key_file_watch.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace gossip_rdzv::transport {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Written to a new file and renamed over `path`, as `gossip-rdzv keys` does.
void replace_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".new";
  std::ofstream(temporary) << text;
  ASSERT_EQ(std::rename(temporary.c_str(), path.c_str()), 0);
}

TEST(KeyFileWatch, RereadsAChangedFileOncePerInterval) {
  const std::string path = ::testing::TempDir() + "/key_file_watch_test.key";
  const std::string first = Keyring::generate_key_line();
  const std::string second = Keyring::generate_key_line();
  replace_file(path, first + "\n");
  KeyFileWatch watch(path, 1s);
  const auto t0 = Clock::now();
  EXPECT_FALSE(watch.poll(t0).has_value()) << "unchanged since the watch began";

  replace_file(path, second + "\n" + first + "\n");
  EXPECT_FALSE(watch.poll(t0 + 500ms).has_value()) << "looked again within the interval";
  const auto change = watch.poll(t0 + 1s);
  ASSERT_TRUE(change.has_value());
  ASSERT_NE(change->keyring, nullptr) << change->problem;
  EXPECT_EQ(change->keyring->size(), 2u);
  EXPECT_EQ(change->keyring->primary_id(), Keyring::parse(second, "t")->primary_id());
  EXPECT_FALSE(watch.poll(t0 + 2s).has_value()) << "no change since it was read";
}

TEST(KeyFileWatch, ABrokenOrMissingFileIsReportedNotUsed) {
  const std::string path = ::testing::TempDir() + "/key_file_watch_broken.key";
  replace_file(path, Keyring::generate_key_line() + "\n");
  KeyFileWatch watch(path, 1s);
  const auto t0 = Clock::now();
  replace_file(path, "not a key\n");
  const auto broken = watch.poll(t0 + 1s);
  ASSERT_TRUE(broken.has_value());
  EXPECT_EQ(broken->keyring, nullptr);
  EXPECT_NE(broken->problem.find("line 1"), std::string::npos) << broken->problem;

  std::remove(path.c_str());
  const auto missing = watch.poll(t0 + 2s);
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->keyring, nullptr);
  EXPECT_NE(missing->problem.find("cannot be read"), std::string::npos) << missing->problem;
}

}  // namespace
}  // namespace gossip_rdzv::transport
