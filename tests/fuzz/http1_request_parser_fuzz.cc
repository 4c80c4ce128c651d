// libFuzzer target for Http1RequestParser. Input: two bytes of seed, then the bytes a client
// sends. Each input is parsed twice, whole and in pieces whose sizes come from the seed, and
// the two readings must agree: a parser whose answer depends on how the bytes were split is a
// parser a client can split around. A sink checks what the head promises (lower-case names,
// trimmed values, no control bytes, one framing) and touches every byte it is handed, so that
// a view into freed or reused memory shows up under ASan.
#include "http/http1_request_parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using portico::http::Http1RequestParser;
using portico::http::InlineArena;
using portico::http::ParseError;
using portico::http::ParserLimits;
using portico::http::RequestHead;
using portico::http::Version;

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      __builtin_trap();                                                                            \
  } while (0)

bool is_ctl(unsigned char c) {
  return (c < 0x20 && c != '\t') || c == 0x7f;
}

struct Request {
  std::string head; // the head's fields, serialised
  std::string body;
  bool ended = false;
};

class CheckingSink : public Http1RequestParser::Sink {
public:
  explicit CheckingSink(const ParserLimits& limits) : limits_(limits) {}

  void on_request_head(RequestHead& h) override {
    FUZZ_CHECK(requests.empty() || requests.back().ended);
    FUZZ_CHECK(!h.method.empty() && !h.target.empty());
    FUZZ_CHECK(h.version == Version::HTTP_1_0 || h.version == Version::HTTP_1_1);
    FUZZ_CHECK(h.scheme == "http" || h.scheme == "https");
    FUZZ_CHECK(!(h.chunked && h.content_length >= 0));
    FUZZ_CHECK(!(h.chunked && h.version == Version::HTTP_1_0));
    FUZZ_CHECK(limits_.max_body_bytes < 0 || h.content_length <= limits_.max_body_bytes);
    FUZZ_CHECK(h.headers.size() <= limits_.max_headers);
    FUZZ_CHECK(h.target.size() <= limits_.max_uri_bytes);
    std::string s;
    s.append(h.method).append(" ").append(h.scheme).append("://").append(h.authority);
    s.append(h.target).append(h.version == Version::HTTP_1_0 ? " 1.0" : " 1.1");
    s.append(h.keep_alive ? " ka" : " close").append(h.expect_continue ? " expect" : "");
    s.append(" cl=").append(std::to_string(h.content_length)).append(h.chunked ? " chunked" : "");
    for (unsigned char c : h.target)
      FUZZ_CHECK(c > 0x20 && c < 0x7f);
    for (const auto& f : h.headers) {
      FUZZ_CHECK(!f.name.empty());
      for (unsigned char c : f.name)
        FUZZ_CHECK(c > 0x20 && c < 0x7f && c != ':' && !(c >= 'A' && c <= 'Z'));
      for (unsigned char c : f.value)
        FUZZ_CHECK(!is_ctl(c));
      if (!f.value.empty()) {
        FUZZ_CHECK(f.value.front() != ' ' && f.value.front() != '\t');
        FUZZ_CHECK(f.value.back() != ' ' && f.value.back() != '\t');
      }
      s.append("\n").append(f.name).append(": ").append(f.value);
    }
    requests.push_back({std::move(s), {}, false});
    content_length_ = h.content_length;
  }

  void on_request_body(std::string_view data) override {
    FUZZ_CHECK(!requests.empty() && !requests.back().ended);
    requests.back().body.append(data); // copies: touches every byte
    int64_t n = static_cast<int64_t>(requests.back().body.size());
    FUZZ_CHECK(limits_.max_body_bytes < 0 || n <= limits_.max_body_bytes);
    FUZZ_CHECK(content_length_ < 0 || n <= content_length_);
  }

  void on_request_end() override {
    FUZZ_CHECK(!requests.empty() && !requests.back().ended);
    FUZZ_CHECK(content_length_ < 0 ||
               static_cast<int64_t>(requests.back().body.size()) == content_length_);
    requests.back().ended = true;
  }

  std::vector<Request> requests;

private:
  const ParserLimits& limits_;
  int64_t content_length_ = -1;
};

struct Reading {
  std::vector<Request> requests;
  bool failed = false;
  ParseError error = ParseError::NONE;
};

// Feeds data in pieces: whole when max_piece is 0, else of 1..max_piece bytes drawn from rng.
Reading read(const uint8_t* data, size_t size, const ParserLimits& limits, uint32_t rng,
             size_t max_piece) {
  CheckingSink sink(limits);
  RequestHead head;
  InlineArena<> arena;
  Http1RequestParser parser(sink, head, arena, limits);
  const char* p = reinterpret_cast<const char*>(data);
  size_t used = 0;
  while (used < size && !parser.failed()) {
    if (parser.paused()) {
      FUZZ_CHECK(parser.idle());
      parser.resume();
    }
    size_t n = size - used;
    if (max_piece > 0) {
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      n = std::min<size_t>(n, 1 + rng % max_piece);
    }
    size_t k = parser.feed(p + used, n);
    FUZZ_CHECK(k <= n);
    // No progress without a pause or an error would spin a session's read loop.
    FUZZ_CHECK(k > 0 || parser.paused() || parser.failed());
    used += k;
  }
  if (parser.failed())
    FUZZ_CHECK(parser.error() != ParseError::NONE && !parser.idle());
  return {std::move(sink.requests), parser.failed(), parser.error()};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  uint32_t seed = data[0] | (uint32_t{data[1]} << 8);
  data += 2;
  size -= 2;

  ParserLimits limits;
  if (seed & 0x8000) { // small limits, so that every limit is reachable
    limits.max_uri_bytes = 64;
    limits.max_header_bytes = 256;
    limits.max_headers = 8;
    limits.max_body_bytes = 128;
  } else {
    limits.max_body_bytes = (seed & 0x4000) ? 1 << 20 : -1;
  }
  static constexpr size_t kPieces[] = {1, 2, 3, 7, 16, 64, 300};
  size_t max_piece = kPieces[seed % (sizeof kPieces / sizeof kPieces[0])];

  Reading whole = read(data, size, limits, 0, 0);
  Reading split = read(data, size, limits, seed | 1, max_piece);

  // Both readings refuse, or neither does; the requests completed before a refusal are the
  // same. (Which status a refused request gets may differ: two faults in one request can be
  // met in either order.)
  FUZZ_CHECK(whole.failed == split.failed);
  size_t done_whole = 0, done_split = 0;
  for (const auto& r : whole.requests)
    done_whole += r.ended;
  for (const auto& r : split.requests)
    done_split += r.ended;
  FUZZ_CHECK(done_whole == done_split);
  for (size_t i = 0; i < done_whole; ++i) {
    FUZZ_CHECK(whole.requests[i].head == split.requests[i].head);
    FUZZ_CHECK(whole.requests[i].body == split.requests[i].body);
  }
  if (!whole.failed) {
    FUZZ_CHECK(whole.requests.size() == split.requests.size());
    if (!whole.requests.empty()) {
      FUZZ_CHECK(whole.requests.back().head == split.requests.back().head);
      FUZZ_CHECK(whole.requests.back().body == split.requests.back().body);
    }
  }
  return 0;
}
