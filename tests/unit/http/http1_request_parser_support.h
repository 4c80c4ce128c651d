#pragma once
// Shared by the request parser's tests: a recording sink and feeders that hand the parser its
// bytes whole, in fixed steps or in random pieces, resuming after every request.
#include "http/http1_request_parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace portico::http::request_test {

struct Request {
  std::string method, scheme, authority, target;
  Version version = Version::HTTP_1_1;
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t content_length = -1;
  bool chunked = false, keep_alive = false, expect_continue = false;
  size_t head_bytes = 0;
  std::string body;
  bool ended = false;

  bool operator==(const Request&) const = default;
};

struct Recorder : Http1RequestParser::Sink {
  void on_request_head(RequestHead& h) override {
    Request r;
    r.method = h.method;
    r.scheme = h.scheme;
    r.authority = h.authority;
    r.target = h.target;
    r.version = h.version;
    for (const auto& f : h.headers)
      r.headers.emplace_back(f.name, f.value);
    r.content_length = h.content_length;
    r.chunked = h.chunked;
    r.keep_alive = h.keep_alive;
    r.expect_continue = h.expect_continue;
    r.head_bytes = parser ? parser->head_bytes() : 0;
    requests.push_back(std::move(r));
  }
  void on_request_body(std::string_view data) override { requests.back().body += data; }
  void on_request_end() override { requests.back().ended = true; }

  std::vector<Request> requests;
  const Http1RequestParser* parser = nullptr; // to record head_bytes()
};

struct Outcome {
  std::vector<Request> requests;
  ParseError error = ParseError::NONE;
  std::string reason;
  int status() const { return parse_error_status(error); }
};

// Feeds input in pieces of next_piece(bytes left) bytes, resuming after every request, the
// way a session does once it has answered.
template <typename NextPiece>
Outcome feed_pieces(std::string_view input, const ParserLimits& limits, NextPiece next_piece) {
  Recorder sink;
  RequestHead head;
  InlineArena<> arena;
  Http1RequestParser parser(sink, head, arena, limits);
  sink.parser = &parser;
  size_t used = 0;
  while (used < input.size() && !parser.failed()) {
    if (parser.paused())
      parser.resume();
    size_t n = next_piece(input.size() - used);
    size_t k = parser.feed(input.data() + used, n);
    EXPECT_LE(k, n);
    used += k;
    if (k == 0 && !parser.paused() && !parser.failed()) {
      ADD_FAILURE() << "parser made no progress at byte " << used;
      break;
    }
  }
  return {std::move(sink.requests), parser.error(), parser.error_reason()};
}

// Pieces of at most `step` bytes.
inline Outcome parse(std::string_view input, const ParserLimits& limits = {},
                     size_t step = SIZE_MAX) {
  return feed_pieces(input, limits, [step](size_t left) { return std::min(step, left); });
}

// Splits at pseudo-random points (fixed seed): finds state kept wrongly across feeds.
inline Outcome parse_random_splits(std::string_view input, unsigned seed,
                                   const ParserLimits& limits = {}) {
  std::mt19937 rng(seed);
  return feed_pieces(input, limits,
                     [&rng](size_t left) { return std::min<size_t>(1 + rng() % 17, left); });
}

inline const std::string kGet = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

inline std::string chunked_post(std::string_view body_framing) {
  return "POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" +
         std::string(body_framing);
}

} // namespace portico::http::request_test
