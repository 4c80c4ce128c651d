#include "cache/stored_file.h"

#include <cstring>

namespace portico::cache {

namespace {

// The version is in the magic: a file of another version is not read, and goes.
constexpr char kMagic[8] = {'P', 'O', 'R', 'T', 'C', 'F', '0', '1'};
// A head is bounded as the proxy bounds a response head it reads.
constexpr uint64_t kMaxHead = 1u << 20;
constexpr uint32_t kMaxCount = 4096;

// Integers are little-endian whatever the machine, so that a directory can move.
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

uint64_t get_u64_at(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// Reads what put_* wrote; once a read fails, every later one does.
class Reader {
public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint64_t u64() {
    if (!ok_ || in_.size() < 8)
      return fail();
    uint64_t v = get_u64_at(in_.data());
    in_.remove_prefix(8);
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  std::string_view str() {
    uint64_t n = u64();
    if (!ok_ || n > in_.size()) {
      fail();
      return {};
    }
    std::string_view s = in_.substr(0, n);
    in_.remove_prefix(n);
    return s;
  }
  bool done() const { return ok_ && in_.empty(); }
  bool ok() const { return ok_; }

private:
  uint64_t fail() {
    ok_ = false;
    return 0;
  }
  std::string_view in_;
  bool ok_ = true;
};

constexpr uint64_t NEVER_FRESH = 1, NO_CACHE = 2, NO_STALE = 4, HEURISTIC = 8, AUTH_OK = 16;

} // namespace

void encode_file_head(std::string_view key, const StoredResponse& r, uint64_t body_size,
                      std::string& out) {
  out.assign(kMagic, sizeof kMagic);
  put_u64(out, 0); // the head's length, once known
  put_u64(out, body_size);
  put_str(out, key);
  put_str(out, r.vary_key);
  put_u64(out, r.vary_names.size());
  for (const auto& n : r.vary_names)
    put_str(out, n);
  put_u64(out, static_cast<uint64_t>(r.status));
  put_str(out, r.date);
  const Freshness& f = r.fresh;
  for (int64_t v : {f.lifetime, f.initial_age, static_cast<int64_t>(f.response_time),
                    static_cast<int64_t>(f.date), f.stale_while_revalidate, f.stale_if_error})
    put_u64(out, static_cast<uint64_t>(v));
  uint64_t flags = (f.never_fresh ? NEVER_FRESH : 0) | (f.no_cache ? NO_CACHE : 0) |
                   (f.no_stale ? NO_STALE : 0) | (f.heuristic ? HEURISTIC : 0) |
                   (r.auth_ok ? AUTH_OK : 0);
  put_u64(out, flags);
  put_u64(out, r.fields.size());
  for (const auto& h : r.fields) {
    put_str(out, h.name);
    put_str(out, h.value);
  }
  uint64_t head = out.size() - kFilePrefix;
  for (int i = 0; i < 8; ++i)
    out[8 + i] = static_cast<char>(head >> (8 * i));
}

bool decode_file_prefix(std::string_view prefix, uint64_t& head_size, uint64_t& body_size) {
  if (prefix.size() < kFilePrefix || std::memcmp(prefix.data(), kMagic, sizeof kMagic) != 0)
    return false;
  head_size = get_u64_at(prefix.data() + 8);
  body_size = get_u64_at(prefix.data() + 16);
  return head_size > 0 && head_size <= kMaxHead && body_size < (uint64_t{1} << 48);
}

bool decode_file_head(std::string_view head, std::string& key, StoredResponse& r,
                      std::vector<http::Header>& fields) {
  Reader in(head);
  key = in.str();
  r.vary_key = in.str();
  uint64_t names = in.u64();
  if (names > kMaxCount)
    return false;
  r.vary_names.clear();
  for (uint64_t i = 0; i < names && in.ok(); ++i)
    r.vary_names.emplace_back(in.str());
  uint64_t status = in.u64();
  std::string_view date = in.str();
  Freshness& f = r.fresh;
  f.lifetime = in.i64();
  f.initial_age = in.i64();
  f.response_time = static_cast<time_t>(in.i64());
  f.date = static_cast<time_t>(in.i64());
  f.stale_while_revalidate = in.i64();
  f.stale_if_error = in.i64();
  uint64_t flags = in.u64();
  uint64_t count = in.u64();
  if (!in.ok() || status < 100 || status > 999 || count > kMaxCount || key.empty() ||
      flags > (AUTH_OK << 1) - 1)
    return false;
  fields.clear();
  fields.reserve(count);
  for (uint64_t i = 0; i < count && in.ok(); ++i) {
    std::string_view name = in.str();
    std::string_view value = in.str();
    if (name.empty())
      return false;
    fields.push_back({name, value});
  }
  if (!in.done())
    return false;
  f.never_fresh = flags & NEVER_FRESH;
  f.no_cache = flags & NO_CACHE;
  f.no_stale = flags & NO_STALE;
  f.heuristic = flags & HEURISTIC;
  r.auth_ok = flags & AUTH_OK;
  r.status = static_cast<int>(status);
  r.date = date;
  return true;
}

} // namespace portico::cache
