#include "transport/keyring.hpp"

#include <sodium.h>

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gossip_rdzv/error.hpp"

namespace gossip_rdzv::transport {
namespace {

constexpr std::uint8_t kMagic[4] = {'G', 'R', 'D', 'K'};
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 4 + 1 + 8 + 8;  // magic, version, key id, counter
constexpr std::size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr std::size_t kTagBytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;
static_assert(kKeyBytes == crypto_aead_xchacha20poly1305_ietf_KEYBYTES);
static_assert(Keyring::kOverhead == kHeaderBytes + kNonceBytes + kTagBytes);

// Forks seen by this process (a pthread_atfork child handler counts them), so a keyring can
// tell without a system call that it now runs in a child and must draw a new nonce prefix.
std::atomic<std::uint64_t> fork_generation{0};

void count_fork() {
  fork_generation.fetch_add(1, std::memory_order_relaxed);
}

void ensure_sodium() {
  // Thread-safe and idempotent; it fails only when no random source can be opened.
  static const int ready = [] {
    ::pthread_atfork(nullptr, nullptr, count_fork);
    return sodium_init();
  }();
  if (ready < 0) {
    throw Error(ErrorCode::internal, "libsodium could not initialise (no random source)");
  }
}

// What the tag covers besides the ciphertext: the clear header, the receiver's challenge and
// the sender's side of the connection.
using AssociatedData = std::array<std::uint8_t, kHeaderBytes + sizeof(Challenge) + 1>;
AssociatedData associated_data(const std::uint8_t* header, const Challenge& receiver, Side sender) {
  AssociatedData ad{};
  std::memcpy(ad.data(), header, kHeaderBytes);
  std::memcpy(ad.data() + kHeaderBytes, receiver.data(), receiver.size());
  ad.back() = static_cast<std::uint8_t>(sender);
  return ad;
}

KeyId id_of(const std::array<std::uint8_t, kKeyBytes>& key) {
  std::array<std::uint8_t, crypto_generichash_BYTES_MIN> hash{};
  crypto_generichash(hash.data(), hash.size(), key.data(), key.size(), nullptr, 0);
  KeyId id{};
  std::memcpy(id.data(), hash.data(), id.size());
  return id;
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

Error key_file_error(const std::string& source, const std::string& problem) {
  return Error(ErrorCode::usage,
               "key file " + source + ": " + problem +
                   "; make one with `gossip-rdzv keygen PATH` and give every node of the job "
                   "the same file");
}

}  // namespace

std::string key_id_text(const KeyId& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t byte : id) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

Challenge new_challenge() {
  ensure_sodium();
  Challenge challenge{};
  randombytes_buf(challenge.data(), challenge.size());
  return challenge;
}

Bytes encode_challenge(const Challenge& challenge) {
  Bytes out(5 + challenge.size());
  std::memcpy(out.data(), "GRDC", 4);
  out[4] = kVersion;
  std::memcpy(out.data() + 5, challenge.data(), challenge.size());
  return out;
}

bool looks_like_challenge(const Bytes& bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), "GRDC", 4) == 0;
}

std::optional<Challenge> decode_challenge(const Bytes& bytes) {
  if (bytes.size() != 5 + sizeof(Challenge) || !looks_like_challenge(bytes) ||
      bytes[4] != kVersion) {
    return std::nullopt;
  }
  Challenge challenge{};
  std::memcpy(challenge.data(), bytes.data() + 5, challenge.size());
  return challenge;
}

bool looks_sealed(const Bytes& bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

Keyring::Keyring(std::vector<std::array<std::uint8_t, kKeyBytes>> keys) : keys_(std::move(keys)) {
  ensure_sodium();
  if (keys_.empty()) throw Error(ErrorCode::usage, "a keyring needs at least one key");
  prefix_fork_generation_ = fork_generation.load(std::memory_order_relaxed);
  randombytes_buf(nonce_prefix_.data(), nonce_prefix_.size());
  for (const auto& key : keys_) ids_.push_back(id_of(key));
}

std::shared_ptr<const Keyring> Keyring::parse(std::string_view text, const std::string& source) {
  ensure_sodium();
  std::vector<std::array<std::uint8_t, kKeyBytes>> keys;
  std::istringstream lines{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string word = trimmed(line);
    if (word.empty() || word.front() == '#') continue;
    // One byte more than a key, so that a longer line is seen as too long (sodium writes up
    // to the given size before it reports that the text does not fit).
    std::array<std::uint8_t, kKeyBytes + 1> decoded_bytes{};
    std::size_t length = 0;
    const char* end = nullptr;
    const bool decoded =
        sodium_base642bin(decoded_bytes.data(), decoded_bytes.size(), word.data(), word.size(),
                          nullptr, &length, &end, sodium_base64_VARIANT_ORIGINAL) == 0 &&
        end == word.data() + word.size();
    std::array<std::uint8_t, kKeyBytes> key{};
    std::memcpy(key.data(), decoded_bytes.data(), key.size());
    sodium_memzero(decoded_bytes.data(), decoded_bytes.size());
    if (!decoded || length != kKeyBytes) {
      sodium_memzero(key.data(), key.size());
      throw key_file_error(source, "line " + std::to_string(number) +
                                       " is not a key (a key is 32 bytes in base64, 44 "
                                       "characters)");
    }
    keys.push_back(key);
    sodium_memzero(key.data(), key.size());
  }
  if (keys.empty()) throw key_file_error(source, "it holds no key");
  return std::make_shared<const Keyring>(std::move(keys));
}

std::shared_ptr<const Keyring> Keyring::load_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw key_file_error(path, std::string("cannot be read (") + std::strerror(errno) + ")");
  }
  std::ostringstream text;
  // A key file is a few lines; a much larger one is not a key file.
  constexpr std::size_t kMaxKeyFileBytes = 64 * 1024;
  text << file.rdbuf();
  const std::string contents = text.str();
  if (contents.size() > kMaxKeyFileBytes)
    throw key_file_error(path, "it is too large (64 KiB at most)");
  return parse(contents, path);
}

std::string Keyring::generate_key_line() {
  ensure_sodium();
  std::array<std::uint8_t, kKeyBytes> key{};
  crypto_aead_xchacha20poly1305_ietf_keygen(key.data());
  std::string line(sodium_base64_ENCODED_LEN(kKeyBytes, sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(line.data(), line.size(), key.data(), key.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  sodium_memzero(key.data(), key.size());
  line.resize(std::strlen(line.c_str()));
  return line;
}

Bytes Keyring::seal(const std::uint8_t* plain, std::size_t size, const Challenge& theirs,
                    std::uint64_t counter, Side from) const {
  Bytes out(kOverhead + size);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[4] = kVersion;
  std::memcpy(out.data() + 5, ids_.front().data(), ids_.front().size());
  for (int i = 0; i < 8; ++i) out[13 + i] = static_cast<std::uint8_t>(counter >> (56 - 8 * i));
  const auto ad = associated_data(out.data(), theirs, from);
  std::uint8_t* nonce = out.data() + kHeaderBytes;
  static_assert(kNonceBytes == 16 + 8);
  std::uint64_t count = 0;
  {
    std::lock_guard lock(nonce_mutex_);
    if (const auto forks = fork_generation.load(std::memory_order_relaxed);
        forks != prefix_fork_generation_) {
      randombytes_buf(nonce_prefix_.data(), nonce_prefix_.size());
      prefix_fork_generation_ = forks;
      sealed_count_ = 0;
    }
    std::memcpy(nonce, nonce_prefix_.data(), nonce_prefix_.size());
    count = sealed_count_++;
  }
  for (int i = 0; i < 8; ++i) nonce[16 + i] = static_cast<std::uint8_t>(count >> (56 - 8 * i));
  unsigned long long written = 0;
  crypto_aead_xchacha20poly1305_ietf_encrypt(out.data() + kHeaderBytes + kNonceBytes, &written,
                                             plain, size, ad.data(), ad.size(), nullptr, nonce,
                                             keys_.front().data());
  out.resize(kHeaderBytes + kNonceBytes + written);
  return out;
}

Opened Keyring::open(const std::uint8_t* bytes, std::size_t size, const Challenge& mine,
                     std::uint64_t last_counter, Side from) const {
  Opened opened;
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) return opened;
  if (size < kOverhead || bytes[4] != kVersion) {
    opened.status = OpenStatus::forged;  // our magic, but no message we could have sealed
    return opened;
  }
  std::memcpy(opened.key_id.data(), bytes + 5, opened.key_id.size());
  std::size_t index = 0;
  while (index < ids_.size() && ids_[index] != opened.key_id) ++index;
  if (index == ids_.size()) {
    opened.status = OpenStatus::unknown_key;
    return opened;
  }
  const auto ad = associated_data(bytes, mine, from);
  const std::uint8_t* nonce = bytes + kHeaderBytes;
  const std::uint8_t* cipher = nonce + kNonceBytes;
  const std::size_t cipher_size = size - kHeaderBytes - kNonceBytes;
  opened.plain.resize(cipher_size - kTagBytes);
  unsigned long long length = 0;
  if (crypto_aead_xchacha20poly1305_ietf_decrypt(opened.plain.data(), &length, nullptr, cipher,
                                                 cipher_size, ad.data(), ad.size(), nonce,
                                                 keys_[index].data()) != 0) {
    opened.plain.clear();
    opened.status = OpenStatus::forged;
    return opened;
  }
  std::uint64_t counter = 0;
  for (int i = 0; i < 8; ++i) counter = (counter << 8) | bytes[13 + i];
  if (counter <= last_counter) {
    opened.plain.clear();
    opened.status = OpenStatus::replayed;
    return opened;
  }
  opened.plain.resize(length);
  opened.counter = counter;
  opened.status = OpenStatus::ok;
  return opened;
}

}  // namespace gossip_rdzv::transport
