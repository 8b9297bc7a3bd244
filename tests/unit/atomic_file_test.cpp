#include "output/atomic_file.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gossip_rdzv/error.hpp"
#include "support/temp_dir.hpp"

namespace gossip_rdzv::output {
namespace {

namespace fs = std::filesystem;

using testing_support::read_file;

class AtomicFile : public ::testing::Test {
 protected:
  testing_support::TempDir temp_;
  const fs::path& dir_ = temp_.path();
};

TEST_F(AtomicFile, CreatesDirectoriesAndWrites) {
  const fs::path p = dir_ / "x" / "y" / "f.txt";
  write_file_atomically(p.string(), "hello\n", "test file", "--test");
  EXPECT_EQ(read_file(p), "hello\n");
  write_file_atomically(p.string(), "", "test file", "--test");
  EXPECT_EQ(read_file(p), "");
  EXPECT_EQ(std::distance(fs::directory_iterator(p.parent_path()), fs::directory_iterator{}), 1);
}

TEST_F(AtomicFile, RelativePathInCurrentDirectory) {
  const fs::path old = fs::current_path();
  fs::current_path(dir_);
  write_file_atomically("plain.txt", "x", "test file", "--test");
  fs::current_path(old);
  EXPECT_EQ(read_file(dir_ / "plain.txt"), "x");
}

TEST_F(AtomicFile, ErrorNamesPathStepOsErrorAndFix) {
  std::ofstream(dir_ / "file") << "x";
  const std::string p = (dir_ / "file" / "sub" / "f.txt").string();
  try {
    write_file_atomically(p, "data", "membership file", "--membership-file");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    const std::string msg = e.what();
    for (const std::string& needle : std::vector<std::string>{
             "membership file", p, "creating directory", "Not a directory", "--membership-file"}) {
      EXPECT_NE(msg.find(needle), std::string::npos) << needle << " in: " << msg;
    }
  }
}

TEST_F(AtomicFile, EmptyOrDirectoryPathIsError) {
  EXPECT_THROW(write_file_atomically("", "x", "test file", "--test"), Error);
  EXPECT_THROW(write_file_atomically((dir_ / "d" / "").string(), "x", "test file", "--test"),
               Error);
}

// A reader polling the file while it is rewritten sees one version or the other, whole.
TEST_F(AtomicFile, ReadersNeverSeeHalfAFile) {
  const fs::path p = dir_ / "f.env";
  const std::string a(64 * 1024, 'a');
  const std::string b(32 * 1024, 'b');
  write_file_atomically(p.string(), a, "test file", "--test");
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 200; ++i) write_file_atomically(p.string(), i % 2 ? a : b, "f", "--t");
    stop = true;
  });
  int torn = 0;
  int reads = 0;
  while (!stop) {
    const std::string seen = read_file(p);
    if (seen != a && seen != b) ++torn;
    ++reads;
  }
  writer.join();
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

}  // namespace
}  // namespace gossip_rdzv::output
