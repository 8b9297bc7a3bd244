// KeyFile, the key file as `gossip-rdzv keys` edits it: pure text in, text out.
#include "key_file.hpp"

#include <gtest/gtest.h>

#include "gossip_rdzv/error.hpp"
#include "transport/keyring.hpp"

namespace gossip_rdzv::cli {
namespace {

// Three keys from `gossip-rdzv keygen`.
const std::string kFirst = "VwfrNqigtiiKGL6/Qs5kH1Ycd8J5jrMzZu8DJnJbZks=";
const std::string kSecond = "62IiNHfxCk3XlQt5xOJolqrf5R9a1oEbKfOcdNjHptA=";
const std::string kThird = "lI65SrZOmvW1StZZ8Tm4ES7BxmUzOwy12gu9lkp6Ljg=";

std::string id_of(const std::string& key) {
  return transport::key_id_text(transport::Keyring::parse(key, "test")->primary_id());
}

TEST(KeyFileTest, KeysInOrderWithTheCommentsAboveThem) {
  const KeyFile file =
      KeyFile::parse("# job 42\n" + kFirst + "\n\n# old key\n" + kSecond + "\n# end\n", "job.key");
  ASSERT_EQ(file.keys().size(), 2u);
  EXPECT_EQ(file.keys()[0].text, kFirst);
  EXPECT_EQ(file.keys()[0].id, id_of(kFirst));
  EXPECT_EQ(file.keys()[0].comments, std::vector<std::string>{"# job 42"});
  EXPECT_EQ(file.keys()[1].comments, (std::vector<std::string>{"", "# old key"}));
  // Unchanged, the text comes back as it was.
  EXPECT_EQ(file.text(), "# job 42\n" + kFirst + "\n\n# old key\n" + kSecond + "\n# end\n");
}

TEST(KeyFileTest, UseMovesTheKeyAndItsCommentsFirst) {
  KeyFile file =
      KeyFile::parse("# a\n" + kFirst + "\n# b\n" + kSecond + "\n# c\n" + kThird + "\n", "f");
  file.use(2);
  EXPECT_EQ(file.text(), "# c\n" + kThird + "\n# a\n" + kFirst + "\n# b\n" + kSecond + "\n");
  EXPECT_EQ(transport::Keyring::parse(file.text(), "f")->primary_id(),
            transport::Keyring::parse(kThird, "f")->primary_id());
}

TEST(KeyFileTest, RemoveTakesTheKeyAndItsComments) {
  KeyFile file = KeyFile::parse("# a\n" + kFirst + "\n# b\n" + kSecond + "\n", "f");
  file.remove(1);
  EXPECT_EQ(file.text(), "# a\n" + kFirst + "\n");
}

TEST(KeyFileTest, InstallAppendsOnceWithItsComment) {
  KeyFile file = KeyFile::parse(kFirst + "\n", "f");
  auto key = KeyFile::key_of(kSecond);
  ASSERT_TRUE(key.has_value());
  EXPECT_TRUE(file.install(*key, "# added"));
  EXPECT_FALSE(file.install(*key, "# again"));
  EXPECT_EQ(file.text(), kFirst + "\n# added\n" + kSecond + "\n");
}

TEST(KeyFileTest, FindByKeyOrByIdInAnyCase) {
  const KeyFile file = KeyFile::parse(kFirst + "\n" + kSecond + "\n", "f");
  EXPECT_EQ(file.find(kSecond), 1u);
  EXPECT_EQ(file.find(id_of(kSecond)), 1u);
  std::string upper = id_of(kFirst);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(file.find(upper), 0u);
  EXPECT_FALSE(file.find(kThird).has_value());
  EXPECT_FALSE(file.find("not a key").has_value());
}

TEST(KeyFileTest, KeyOfAcceptsOnlyBase64Of32Bytes) {
  EXPECT_TRUE(KeyFile::key_of(kFirst).has_value());
  EXPECT_TRUE(KeyFile::key_of("  " + kFirst + "\n").has_value());
  EXPECT_FALSE(KeyFile::key_of(kFirst.substr(0, 40)).has_value());
  EXPECT_FALSE(KeyFile::key_of("").has_value());
  EXPECT_FALSE(KeyFile::key_of("# " + kFirst).has_value());
  EXPECT_FALSE(KeyFile::key_of(kFirst + " " + kSecond).has_value());
  EXPECT_FALSE(KeyFile::key_of("aGVsbG8=").has_value());  // base64, 5 bytes
  EXPECT_TRUE(KeyFile::looks_like_id("0123456789abcDEF"));
  EXPECT_FALSE(KeyFile::looks_like_id("0123456789abcdeg"));
  EXPECT_FALSE(KeyFile::looks_like_id("0123456789abcde"));
}

TEST(KeyFileTest, AFileTheAgentsWouldRefuseIsRefused) {
  EXPECT_THROW(KeyFile::parse("# nothing here\n", "f"), Error);
  EXPECT_THROW(KeyFile::parse(kFirst + "\nnot a key\n", "f"), Error);
}

}  // namespace
}  // namespace gossip_rdzv::cli
