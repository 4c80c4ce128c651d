#pragma once
// Shared by the response parser's tests: a recording sink and a feeder that hands the parser
// its bytes whole, in fixed steps or in random pieces.
#include "http/http1_response_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace portico::http::test {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Response {
  int status = 0;
  int minor_version = 1;
  Fields headers;
  int64_t content_length = -1;
  bool chunked = false, keep_alive = false;
  double keepalive_timeout = 0;
  std::string body;
  Fields trailers;
  bool ended = false;

  bool operator==(const Response&) const = default;
};

struct Recorder : Http1ResponseParser::Sink {
  void on_response_head(UpstreamResponseHead& h) override {
    Response r;
    r.status = h.status;
    r.minor_version = h.minor_version;
    for (const auto& f : h.headers)
      r.headers.emplace_back(f.name, f.value);
    r.content_length = h.content_length;
    r.chunked = h.chunked;
    r.keep_alive = h.keep_alive;
    r.keepalive_timeout = h.keepalive_timeout;
    responses.push_back(std::move(r));
  }
  void on_response_body(std::string_view d) override { responses.back().body += d; }
  void on_response_trailer(std::string_view n, std::string_view v) override {
    responses.back().trailers.emplace_back(n, v);
  }
  void on_response_end() override { responses.back().ended = true; }

  std::vector<Response> responses;
};

struct Outcome {
  std::vector<Response> responses;
  bool failed = false;
  std::string reason;
  bool done = false;
  size_t used = 0; // bytes the parser took

  // Equal readings; the reason may differ when two faults can be met in either order.
  bool same_as(const Outcome& o) const {
    return responses == o.responses && failed == o.failed && done == o.done && used == o.used;
  }
};

constexpr size_t kMax = 4096;

// How a test feeds its bytes: whole, in pieces of `step` bytes, or in random pieces of 1..17
// bytes when `seed` is set; with eof, the upstream closes after the last byte.
struct Feed {
  bool head_request = false;
  size_t step = SIZE_MAX;
  unsigned seed = 0;
  bool eof = false;
  size_t max = kMax;
};

inline Outcome parse(std::string_view input, const Feed& how = {}) {
  Recorder sink;
  UpstreamResponseHead head;
  InlineArena<> arena;
  Http1ResponseParser parser(sink, head, arena, how.max);
  parser.start(how.head_request);
  std::mt19937 rng(how.seed);
  size_t used = 0;
  while (used < input.size() && !parser.failed() && !parser.done()) {
    size_t n = how.seed ? 1 + rng() % 17 : how.step;
    n = std::min(n, input.size() - used);
    size_t k = parser.feed(input.data() + used, n);
    EXPECT_LE(k, n);
    used += k;
    // The upstream's read loop stops only on done or failure: a short read without either
    // would stall it.
    if (k < n && !parser.done() && !parser.failed()) {
      ADD_FAILURE() << "parser stopped at byte " << used << " without ending or failing";
      break;
    }
  }
  if (how.eof && !parser.failed() && !parser.done())
    parser.finish();
  return {std::move(sink.responses), parser.failed(), parser.error_reason(), parser.done(), used};
}

inline const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

inline std::string chunked(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(body);
}

} // namespace portico::http::test
