#include "output/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
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

// The message names the path, what it is and the option to change.
void expect_refused(const std::function<void()>& write, const std::string& what_it_is) {
  try {
    write();
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(what_it_is), std::string::npos) << msg;
    EXPECT_NE(msg.find("--env-file"), std::string::npos) << msg;
  }
}

TEST_F(AtomicFile, FifoIsRefusedAndLeftInPlace) {
  fs::create_directories(dir_);
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused([&] { write_file_atomically(fifo.string(), "x", "env file", "--env-file"); },
                 "a FIFO");
  expect_refused([&] { check_output_path(fifo.string(), "env file", "--env-file"); }, "a FIFO");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

// Checked without writing, so the device itself is never at risk here.
TEST_F(AtomicFile, DeviceAndDirectoryAreRefusedBeforeAnyWrite) {
  expect_refused([] { check_output_path("/dev/full", "env file", "--env-file"); },
                 "a character device");
  fs::create_directories(dir_);
  expect_refused([&] { check_output_path(dir_.string(), "env file", "--env-file"); },
                 "a directory");
}

TEST_F(AtomicFile, SymlinkIsFollowedToItsRegularFile) {
  fs::create_directories(dir_ / "real");
  const fs::path file = dir_ / "real" / "node.env";
  std::ofstream(file) << "old";
  const fs::path link = dir_ / "link.env";
  fs::create_symlink(fs::path("real") / "node.env", link);
  check_output_path(link.string(), "env file", "--env-file");
  write_file_atomically(link.string(), "new", "env file", "--env-file");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(file), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "real"), fs::directory_iterator{}), 1);
}

TEST_F(AtomicFile, DanglingSymlinkOrLinkToAFifoIsRefused) {
  fs::create_directories(dir_);
  const fs::path dangling = dir_ / "dangling.env";
  fs::create_symlink(dir_ / "missing" / "x.env", dangling);
  expect_refused([&] { write_file_atomically(dangling.string(), "x", "env file", "--env-file"); },
                 "leads nowhere");
  EXPECT_TRUE(fs::is_symlink(dangling));
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const fs::path to_fifo = dir_ / "to_fifo.env";
  fs::create_symlink(fifo, to_fifo);
  expect_refused([&] { write_file_atomically(to_fifo.string(), "x", "env file", "--env-file"); },
                 "which is a FIFO");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
}

TEST_F(AtomicFile, CheckCreatesTheDirectoryButNoFile) {
  const fs::path p = dir_ / "a" / "b" / "node.env";
  check_output_path(p.string(), "env file", "--env-file");
  EXPECT_TRUE(fs::is_directory(p.parent_path()));
  EXPECT_FALSE(fs::exists(p));
  std::ofstream(dir_ / "plain") << "x";
  expect_refused(
      [&] { check_output_path((dir_ / "plain" / "f.env").string(), "env file", "--env-file"); },
      "creating directory");
}

TEST_F(AtomicFile, NewFileIsCreatedWithItsModeAndNeverReplacesWhatExists) {
  const fs::path p = dir_ / "keys" / "job.key";
  ASSERT_TRUE(write_new_file(p.string(), "secret\n", "key file", "keygen", 0600));
  EXPECT_EQ(read_file(p), "secret\n");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(write_new_file(p.string(), "other\n", "key file", "keygen", 0600));
  EXPECT_EQ(read_file(p), "secret\n");
}

TEST_F(AtomicFile, NewFileDoesNotFollowALinkPlantedAtItsPath) {
  const fs::path target = dir_ / "elsewhere";
  const fs::path link = dir_ / "job.key";
  fs::create_symlink(target, link);  // dangling: O_EXCL alone would create `elsewhere`
  EXPECT_FALSE(write_new_file(link.string(), "secret\n", "key file", "keygen", 0600));
  EXPECT_FALSE(fs::exists(target));
}

TEST_F(AtomicFile, NewFileInAnUnwritablePlaceNamesTheStep) {
  std::ofstream(dir_ / "plain") << "x";
  try {
    write_new_file((dir_ / "plain" / "job.key").string(), "k", "key file", "keygen");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io_error);
    EXPECT_NE(std::string(e.what()).find("cannot write key file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("creating directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gossip_rdzv::output
