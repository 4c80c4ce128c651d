// libFuzzer target for Http1ResponseParser. Input: two bytes of seed, then the bytes an
// upstream connection carries: responses one after another, the parser restarted after each
// (to HEAD or not, as the seed says) the way Http1UpstreamConnection reuses it. Each input is
// parsed twice, whole and in pieces whose sizes come from the seed, and the two readings must
// agree: a parser whose answer depends on how the bytes were split is one a backend can split
// around. Each response accepted is framed again by a plain strict reader written here (the head
// ends at the first empty line, chunks are decoded by hand), which must end it at the same byte
// with the same body: where two readers disagree on that, a pooled connection desynchronises. A
// sink checks what the head promises and touches every byte it is handed, so that a view into
// freed or reused memory shows up under ASan.
#include "http/http1_response_parser.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using portico::http::Http1ResponseParser;
using portico::http::InlineArena;
using portico::http::UpstreamResponseHead;

#define FUZZ_CHECK(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      __builtin_trap();                                                                            \
  } while (0)

bool is_ctl(unsigned char c) {
  return (c < 0x20 && c != '\t') || c == 0x7f;
}

struct Response {
  std::string head; // status and fields, serialised
  int status = 0;
  int64_t content_length = -1;
  bool chunked = false;
  bool no_body = false;
  std::string body;
  std::string trailers;
  bool ended = false;
  size_t begin = 0, end = 0; // where its bytes start and end in the input
};

class CheckingSink : public Http1ResponseParser::Sink {
public:
  void on_response_head(UpstreamResponseHead& h) override {
    FUZZ_CHECK(responses.empty() || responses.back().ended);
    FUZZ_CHECK(h.status >= 200 && h.status <= 999);
    FUZZ_CHECK(h.minor_version == 0 || h.minor_version == 1);
    FUZZ_CHECK(h.content_length >= -1);
    FUZZ_CHECK(!(h.chunked && h.content_length >= 0));
    FUZZ_CHECK(!(h.chunked && h.minor_version == 0));
    bool no_body = head_request || h.status == 204 || h.status == 304;
    // A body without a length ends with the connection, which cannot be reused.
    FUZZ_CHECK(!h.keep_alive || no_body || h.chunked || h.content_length >= 0);
    std::string s = std::to_string(h.status) + (h.minor_version ? " 1.1" : " 1.0");
    s.append(h.keep_alive ? " ka" : " close");
    s.append(" cl=").append(std::to_string(h.content_length)).append(h.chunked ? " chunked" : "");
    s.append(" t=").append(std::to_string(h.keepalive_timeout));
    int te = 0;
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
      te += f.name == "transfer-encoding";
      s.append("\n").append(f.name).append(": ").append(f.value);
    }
    if (!no_body)
      FUZZ_CHECK(h.chunked == (te == 1) && te <= 1);
    Response r;
    r.head = std::move(s);
    r.status = h.status;
    r.content_length = h.content_length;
    r.chunked = h.chunked;
    r.no_body = no_body;
    responses.push_back(std::move(r));
  }

  void on_response_body(std::string_view data) override {
    FUZZ_CHECK(!responses.empty() && !responses.back().ended);
    Response& r = responses.back();
    FUZZ_CHECK(!r.no_body);
    r.body.append(data); // copies: touches every byte
    FUZZ_CHECK(r.content_length < 0 || static_cast<int64_t>(r.body.size()) <= r.content_length);
  }

  void on_response_trailer(std::string_view name, std::string_view value) override {
    FUZZ_CHECK(!responses.empty() && responses.back().chunked && !responses.back().ended);
    FUZZ_CHECK(!name.empty());
    for (unsigned char c : value)
      FUZZ_CHECK(!is_ctl(c));
    responses.back().trailers.append(name).append(": ").append(value).append("\n");
  }

  void on_response_end() override {
    FUZZ_CHECK(!responses.empty() && !responses.back().ended);
    Response& r = responses.back();
    FUZZ_CHECK(r.no_body || r.content_length < 0 ||
               static_cast<int64_t>(r.body.size()) == r.content_length);
    r.ended = true;
  }

  bool head_request = false;
  std::vector<Response> responses;
};

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
    return (c | 0x20) - 'a' + 10;
  return -1;
}

// Where a plain strict reader ends a response that starts at in[0], given the framing its head
// declared; and the body it reads. Trailers are skipped, not returned.
struct Framed {
  size_t end;
  std::string body;
};

std::optional<Framed> reference(std::string_view in, const Response& r, bool eof) {
  // Every line of an accepted head ends with CRLF and holds no other CR or LF, so a head ends
  // at the first empty line; a 1xx head is followed by another.
  size_t pos = 0;
  for (;;) {
    size_t e = in.find("\r\n\r\n", pos);
    if (e == std::string_view::npos || in.size() - pos < 12)
      return std::nullopt;
    bool interim = in[pos + 9] == '1';
    pos = e + 4;
    if (!interim)
      break;
  }
  if (r.no_body)
    return Framed{pos, {}};
  if (r.content_length >= 0) {
    if (in.size() - pos < static_cast<uint64_t>(r.content_length))
      return std::nullopt;
    return Framed{pos + static_cast<size_t>(r.content_length),
                  std::string(in.substr(pos, static_cast<size_t>(r.content_length)))};
  }
  if (!r.chunked)
    return eof ? std::optional<Framed>(Framed{in.size(), std::string(in.substr(pos))})
               : std::nullopt;
  std::string body;
  for (;;) {
    uint64_t size = 0;
    size_t digits = 0;
    for (int v; pos < in.size() && (v = hex_value(in[pos])) >= 0; ++pos, ++digits) {
      if (size >> 56)
        return std::nullopt;
      size = size * 16 + static_cast<uint64_t>(v);
    }
    size_t eol = in.find("\r\n", pos);
    if (digits == 0 || eol == std::string_view::npos)
      return std::nullopt;
    pos = eol + 2; // extensions skipped
    if (size == 0)
      break;
    if (in.size() - pos < size + 2 || in.substr(pos + size, 2) != "\r\n")
      return std::nullopt;
    body.append(in.substr(pos, size));
    pos += size + 2;
  }
  for (;;) { // trailer lines, up to the empty one
    size_t eol = in.find("\r\n", pos);
    if (eol == std::string_view::npos)
      return std::nullopt;
    bool empty = eol == pos;
    pos = eol + 2;
    if (empty)
      return Framed{pos, std::move(body)};
  }
}

struct Reading {
  std::vector<Response> responses;
  bool failed = false;
};

bool head_request_for(uint32_t seed, size_t i) {
  return (seed >> (8 + i % 6)) & 1;
}

// Feeds data in pieces: whole when max_piece is 0, else of 1..max_piece bytes drawn from rng.
Reading read(const uint8_t* data, size_t size, size_t max_header_bytes, uint32_t seed, uint32_t rng,
             size_t max_piece) {
  CheckingSink sink;
  UpstreamResponseHead head;
  InlineArena<> arena;
  Http1ResponseParser parser(sink, head, arena, max_header_bytes);
  const char* p = reinterpret_cast<const char*>(data);
  size_t used = 0, begin = 0;
  auto start = [&] {
    sink.head_request = head_request_for(seed, sink.responses.size());
    arena.reset();
    parser.start(sink.head_request);
    begin = used;
  };
  start();
  while (used < size && !parser.failed()) {
    size_t n = size - used;
    if (max_piece > 0) {
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      n = std::min<size_t>(n, 1 + rng % max_piece);
    }
    size_t k = parser.feed(p + used, n);
    FUZZ_CHECK(k <= n);
    // Short of the whole piece only at the end of a response or on a refusal: anything else
    // would stall the upstream's read loop.
    FUZZ_CHECK(k == n || parser.done() || parser.failed());
    used += k;
    if (parser.done()) {
      FUZZ_CHECK(!sink.responses.empty() && sink.responses.back().ended);
      sink.responses.back().begin = begin;
      sink.responses.back().end = used;
      start();
    }
  }
  if (!parser.failed() && used == size && used > begin) {
    // EOF: completes a close-delimited body, and nothing else.
    bool complete = parser.finish();
    FUZZ_CHECK(complete == parser.done());
    if (complete) {
      sink.responses.back().begin = begin;
      sink.responses.back().end = used;
    }
    FUZZ_CHECK(!complete || (!sink.responses.empty() && !sink.responses.back().chunked &&
                             sink.responses.back().content_length < 0));
  }
  for (const auto& r : sink.responses) {
    if (!r.ended)
      continue;
    std::string_view bytes(p + r.begin, size - r.begin);
    auto f = reference(bytes, r, r.end == size);
    FUZZ_CHECK(f.has_value());
    FUZZ_CHECK(r.begin + f->end == r.end);
    FUZZ_CHECK(r.body == f->body);
  }
  return {std::move(sink.responses), parser.failed()};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  uint32_t seed = data[0] | (uint32_t{data[1]} << 8);
  data += 2;
  size -= 2;

  // Small limits so that every limit is reachable; or the upstream's own.
  size_t max_header_bytes = (seed & 0x8000) ? 256 : 65536;
  static constexpr size_t kPieces[] = {1, 2, 3, 7, 16, 64, 300};
  size_t max_piece = kPieces[seed % (sizeof kPieces / sizeof kPieces[0])];

  Reading whole = read(data, size, max_header_bytes, seed, 0, 0);
  Reading split = read(data, size, max_header_bytes, seed, seed | 1, max_piece);

  // Both readings refuse, or neither does; the responses completed are the same, byte for byte.
  FUZZ_CHECK(whole.failed == split.failed);
  FUZZ_CHECK(whole.responses.size() == split.responses.size() || whole.failed);
  size_t n = std::min(whole.responses.size(), split.responses.size());
  for (size_t i = 0; i < n; ++i) {
    const Response& a = whole.responses[i];
    const Response& b = split.responses[i];
    if (!a.ended || !b.ended) {
      FUZZ_CHECK(whole.failed || a.ended == b.ended);
      continue;
    }
    FUZZ_CHECK(a.head == b.head && a.body == b.body && a.trailers == b.trailers);
    FUZZ_CHECK(a.begin == b.begin && a.end == b.end);
  }
  return 0;
}
