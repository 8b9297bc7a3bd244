// Keyring: key files, sealing and opening with one key or several (rotation).
#include "transport/keyring.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv::transport {
namespace {

Bytes bytes_of(std::string_view text) {
  return Bytes(text.begin(), text.end());
}

std::shared_ptr<const Keyring> ring_of(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return Keyring::parse(text, "test");
}

ErrorCode code_of_parse(std::string_view text) {
  try {
    Keyring::parse(text, "test.key");
  } catch (const Error& error) {
    return error.code();
  }
  return ErrorCode::ok;
}

TEST(Keyring, GeneratedLinesAreDistinctKeysThatParse) {
  const std::string a = Keyring::generate_key_line();
  const std::string b = Keyring::generate_key_line();
  EXPECT_EQ(a.size(), 44u);
  EXPECT_NE(a, b);
  const auto ring = ring_of({"# comment", "", a, "  " + b + "  "});
  EXPECT_EQ(ring->size(), 2u);
  EXPECT_NE(ring->ids()[0], ring->ids()[1]);
  EXPECT_EQ(ring->primary_id(), ring_of({a})->primary_id());
  EXPECT_EQ(key_id_text(ring->primary_id()).size(), 16u);
}

const Challenge kReceiver = new_challenge();

TEST(Keyring, SealedMessageOpensWithTheSameKeyOnly) {
  const std::string key = Keyring::generate_key_line();
  const auto sender = ring_of({key});
  const auto receiver = ring_of({key});
  const Bytes plain = bytes_of("join me");
  const Bytes sealed = sender->seal(plain, kReceiver, 1, Side::dialler);
  EXPECT_EQ(sealed.size(), plain.size() + Keyring::kOverhead);
  EXPECT_TRUE(looks_sealed(sealed));
  EXPECT_EQ(std::search(sealed.begin(), sealed.end(), plain.begin(), plain.end()), sealed.end())
      << "the plaintext must not appear in the sealed message";

  const Opened opened = receiver->open(sealed, kReceiver, 0, Side::dialler);
  ASSERT_EQ(opened.status, OpenStatus::ok);
  EXPECT_EQ(opened.plain, plain);
  EXPECT_EQ(opened.counter, 1u);

  const Opened stranger =
      ring_of({Keyring::generate_key_line()})->open(sealed, kReceiver, 0, Side::dialler);
  EXPECT_EQ(stranger.status, OpenStatus::unknown_key);
  EXPECT_EQ(stranger.key_id, sender->primary_id());
  EXPECT_TRUE(stranger.plain.empty());
}

TEST(Keyring, EachSealUsesAFreshNonce) {
  const auto ring = ring_of({Keyring::generate_key_line()});
  std::set<Bytes> seen;
  for (int i = 0; i < 100; ++i)
    seen.insert(ring->seal(bytes_of("same"), kReceiver, 1, Side::dialler));
  EXPECT_EQ(seen.size(), 100u);
}

TEST(Keyring, AnyChangedByteIsRefusedAsForged) {
  const auto ring = ring_of({Keyring::generate_key_line()});
  const Bytes sealed = ring->seal(bytes_of("a vote for round 3"), kReceiver, 7, Side::dialler);
  // Every byte but the magic and the key id: version, counter, nonce, ciphertext and tag.
  for (std::size_t at = 4; at < sealed.size(); ++at) {
    if (at >= 5 && at < 13) continue;  // the key id: changing it names a key we do not hold
    Bytes forged = sealed;
    forged[at] ^= 0x01;
    EXPECT_EQ(ring->open(forged, kReceiver, 0, Side::dialler).status, OpenStatus::forged)
        << "byte " << at;
  }
  Bytes truncated = sealed;
  truncated.resize(sealed.size() - 1);
  EXPECT_EQ(ring->open(truncated, kReceiver, 0, Side::dialler).status, OpenStatus::forged);
  truncated.resize(20);
  EXPECT_EQ(ring->open(truncated, kReceiver, 0, Side::dialler).status, OpenStatus::forged);
}

// A message opens once, on the connection it was sealed for, in the order it was sent.
TEST(Keyring, AReplayedMessageDoesNotOpen) {
  const auto ring = ring_of({Keyring::generate_key_line()});
  const Bytes first = ring->seal(bytes_of("add 1"), kReceiver, 1, Side::dialler);
  const Bytes second = ring->seal(bytes_of("add 1"), kReceiver, 2, Side::dialler);
  const Opened opened = ring->open(first, kReceiver, 0, Side::dialler);
  ASSERT_EQ(opened.status, OpenStatus::ok);
  EXPECT_EQ(ring->open(first, kReceiver, opened.counter, Side::dialler).status,
            OpenStatus::replayed);
  const Opened next = ring->open(second, kReceiver, opened.counter, Side::dialler);
  ASSERT_EQ(next.status, OpenStatus::ok);
  EXPECT_EQ(ring->open(first, kReceiver, next.counter, Side::dialler).status, OpenStatus::replayed);
  // Reflected back to its sender (as if from the other side), it is not authentic.
  EXPECT_EQ(ring->open(second, kReceiver, opened.counter, Side::listener).status,
            OpenStatus::forged);
  // On another connection (another receiver challenge) it is not authentic at all.
  EXPECT_EQ(ring->open(first, new_challenge(), 0, Side::dialler).status, OpenStatus::forged);
}

TEST(Keyring, ChallengesRoundTripAndDiffer) {
  const Challenge a = new_challenge();
  EXPECT_NE(a, new_challenge());
  const Bytes bytes = encode_challenge(a);
  EXPECT_TRUE(looks_like_challenge(bytes));
  EXPECT_FALSE(looks_sealed(bytes));
  EXPECT_EQ(decode_challenge(bytes), a);
  Bytes longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_challenge(longer));
  EXPECT_FALSE(decode_challenge(Bytes(bytes.begin(), bytes.end() - 1)));
}

TEST(Keyring, UnsealedBytesAreNotSealed) {
  const auto ring = ring_of({Keyring::generate_key_line()});
  EXPECT_EQ(ring->open(bytes_of("GRDV plain gossip"), kReceiver, 0, Side::dialler).status,
            OpenStatus::not_sealed);
  EXPECT_EQ(ring->open(Bytes{}, kReceiver, 0, Side::dialler).status, OpenStatus::not_sealed);
  EXPECT_FALSE(looks_sealed(bytes_of("GRD")));
}

TEST(Keyring, RotationAcceptsEveryKeyAndSealsWithThePrimary) {
  const std::string old_key = Keyring::generate_key_line();
  const std::string new_key = Keyring::generate_key_line();
  const auto before = ring_of({old_key});
  const auto installed = ring_of({old_key, new_key});  // new key installed, old still primary
  const auto used = ring_of({new_key, old_key});       // new key made primary
  const auto after = ring_of({new_key});               // old key removed
  const auto status = [](const auto& from, const auto& to) {
    return to
        ->open(from->seal(bytes_of("x"), kReceiver, 1, Side::dialler), kReceiver, 0, Side::dialler)
        .status;
  };
  // Every step can read what every neighbouring step sends.
  EXPECT_EQ(status(before, installed), OpenStatus::ok);
  EXPECT_EQ(status(installed, before), OpenStatus::ok);
  EXPECT_EQ(status(installed, used), OpenStatus::ok);
  EXPECT_EQ(status(used, installed), OpenStatus::ok);
  EXPECT_EQ(status(used, after), OpenStatus::ok);
  EXPECT_EQ(status(after, used), OpenStatus::ok);
  // Skipping the install step is what breaks: the old ring cannot read the new primary.
  EXPECT_EQ(status(used, before), OpenStatus::unknown_key);
}

TEST(Keyring, BadKeyFilesAreUsageErrors) {
  EXPECT_EQ(code_of_parse(""), ErrorCode::usage);
  EXPECT_EQ(code_of_parse("# only a comment\n"), ErrorCode::usage);
  EXPECT_EQ(code_of_parse("not base64 at all!\n"), ErrorCode::usage);
  EXPECT_EQ(code_of_parse("c2hvcnQ=\n"), ErrorCode::usage);  // base64 of 5 bytes
  const std::string key = Keyring::generate_key_line();
  EXPECT_EQ(code_of_parse(key + "x\n"), ErrorCode::usage);
  // Longer than a key without padding (64 hex digits are valid base64 of 48 bytes).
  EXPECT_EQ(code_of_parse(std::string(64, 'a') + "\n"), ErrorCode::usage);
  EXPECT_EQ(code_of_parse(std::string(43, 'A') + "\n"), ErrorCode::usage);
  EXPECT_EQ(code_of_parse(key + "\n"), ErrorCode::ok);
  try {
    Keyring::parse(key + "\nnonsense\n", "job.key");
    FAIL() << "a bad second line must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("job.key"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("line 2"), std::string::npos) << error.what();
  }
}

TEST(Keyring, MissingFileNamesThePath) {
  try {
    Keyring::load_file("/nonexistent/job.key");
    FAIL() << "a missing key file must be refused";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::usage);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/job.key"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("keygen"), std::string::npos);
  }
}

TEST(Keyring, LoadsAKeyFile) {
  const std::string path = ::testing::TempDir() + "/keyring_test.key";
  const std::string key = Keyring::generate_key_line();
  std::ofstream(path) << "# key id whatever\n" << key << "\n";
  EXPECT_EQ(Keyring::load_file(path)->primary_id(), ring_of({key})->primary_id());
}

}  // namespace
}  // namespace gossip_rdzv::transport

namespace gossip_rdzv::transport {
namespace {

// A keyring made before fork() must not give the child the parent's nonces (the same key and
// nonce twice leaks the plaintexts and lets anyone forge).
TEST(Keyring, AForkedChildDrawsItsOwnNonces) {
  const auto ring = Keyring::parse(Keyring::generate_key_line(), "test");
  const Challenge receiver = new_challenge();
  ring->seal(Bytes{1}, receiver, 1, Side::dialler);
  constexpr std::size_t kNonceAt = 4 + 1 + 8 + 8;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const Bytes sealed = ring->seal(Bytes{2}, receiver, 2, Side::dialler);
    const auto written = ::write(fds[1], sealed.data() + kNonceAt, 24);
    ::_exit(written == 24 ? 0 : 1);
  }
  const Bytes sealed = ring->seal(Bytes{2}, receiver, 2, Side::dialler);
  Bytes child_nonce(24);
  ASSERT_EQ(::read(fds[0], child_nonce.data(), child_nonce.size()), 24);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(status, 0);
  EXPECT_NE(child_nonce, Bytes(sealed.begin() + kNonceAt, sealed.begin() + kNonceAt + 24));
}

}  // namespace
}  // namespace gossip_rdzv::transport
