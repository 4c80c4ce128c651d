// Http1ResponseParser: what a strict reader of upstream responses accepts, and what it refuses
// (which the upstream answers with 502, closing the connection). A pooled connection carries
// many clients' exchanges, so every vector runs fed whole, one byte at a time and in random
// pieces: a check that only works when the bytes arrive together is one a backend can split
// around.
#include "http/http1_response_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace portico::http {
namespace {

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

Outcome parse(std::string_view input, const Feed& how = {}) {
  Recorder sink;
  UpstreamResponseHead head;
  Arena arena;
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

// ---- refusals ----

struct Refusal {
  const char* name;
  std::string response;
  bool head_request = false;
};

void PrintTo(const Refusal& r, std::ostream* os) {
  *os << r.name;
}

class RefusedResponse : public ::testing::TestWithParam<Refusal> {};

void expect_refused(const Outcome& o) {
  EXPECT_TRUE(o.failed) << "accepted";
  EXPECT_FALSE(o.done);
  EXPECT_STRNE(o.reason.c_str(), "");
  for (const auto& r : o.responses)
    EXPECT_FALSE(r.ended) << "a refused response must never complete";
}

TEST_P(RefusedResponse, FedWhole) {
  const Refusal& r = GetParam();
  Outcome o = parse(r.response, {.head_request = r.head_request, .eof = true});
  expect_refused(o);
  // Found before the head is handed on, when the fault arrives with it: a 502, not a cut.
  EXPECT_TRUE(o.responses.empty()) << o.reason;
}

TEST_P(RefusedResponse, FedOneByteAtATime) {
  const Refusal& r = GetParam();
  expect_refused(parse(r.response, {.head_request = r.head_request, .step = 1, .eof = true}));
}

TEST_P(RefusedResponse, FedInRandomPieces) {
  const Refusal& r = GetParam();
  for (unsigned seed = 1; seed <= 8; ++seed)
    expect_refused(parse(r.response, {.head_request = r.head_request, .seed = seed, .eof = true}));
}

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

std::string chunked(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(body);
}

std::string with_field(std::string_view field) {
  return "HTTP/1.1 200 OK\r\n" + std::string(field) + "\r\nContent-Length: 0\r\n\r\n";
}

INSTANTIATE_TEST_SUITE_P(
    StatusLine, RefusedResponse,
    ::testing::Values(
        Refusal{"garbage", "SSH-2.0-OpenSSH\r\n"},
        Refusal{"lower_case_version", "http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"http_1_2", "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"http_2", "HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"http_0_9", "HTTP/0.9 200 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"leading_crlf", "\r\n" + kOk}, Refusal{"leading_lf", "\n" + kOk},
        Refusal{"leading_space", " " + kOk},
        Refusal{"two_spaces_before_code", "HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"tab_before_code", "HTTP/1.1\t200 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"tab_after_code", "HTTP/1.1 200\tOK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"two_digits", "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"four_digits", "HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"code_under_100", "HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"code_000", "HTTP/1.1 000\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"letters_in_code", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"no_code", "HTTP/1.1 \r\nContent-Length: 0\r\n\r\n"},
        Refusal{"no_sp_after_version", "HTTP/1.1\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"bare_lf_after_code", "HTTP/1.1 200\nContent-Length: 0\r\n\r\n"},
        Refusal{"bare_lf_after_reason", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n"},
        Refusal{"bare_cr_in_reason", "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"cr_x_after_reason", "HTTP/1.1 200 OK\rXContent-Length: 0\r\n\r\n"},
        Refusal{"nul_in_reason", std::string("HTTP/1.1 200 O\0K\r\nContent-Length: 0\r\n\r\n", 40)},
        Refusal{"del_in_reason", "HTTP/1.1 200 O\x7fK\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"switching_protocols", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                       "Connection: upgrade\r\n\r\n"}));

INSTANTIATE_TEST_SUITE_P(
    HeaderLines, RefusedResponse,
    ::testing::Values(
        Refusal{"bare_lf_ends_field", "HTTP/1.1 200 OK\r\nContent-Length: 0\n\r\n"},
        Refusal{"bare_lf_ends_head", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n"},
        Refusal{"bare_lf_only_head", "HTTP/1.1 200 OK\n\n"},
        // llhttp ends this head at "\r\n\r" and takes the X for the LF it skipped.
        Refusal{"cr_x_ends_head", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\rXHTTP/1.1 200 OK\r\n"
                                  "Content-Length: 0\r\n\r\n"},
        Refusal{"cr_x_ends_field", "HTTP/1.1 200 OK\r\nContent-Length: 0\rX\r\n\r\n"},
        Refusal{"bare_cr_in_value", with_field("X-A: a\rb")},
        Refusal{"nul_in_value", with_field(std::string("X-A: a\0b", 8))},
        Refusal{"del_in_value", with_field("X-A: a\x7f")},
        Refusal{"obs_fold", with_field("X-A: a\r\n b")},
        Refusal{"obs_fold_tab", with_field("X-A: a\r\n\tb")},
        Refusal{"obs_fold_of_content_length",
                "HTTP/1.1 200 OK\r\nContent-Length:\r\n 5\r\n\r\nhello"},
        Refusal{"space_before_colon", with_field("X-A : b")},
        Refusal{"space_before_colon_te",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n"
                "abc"},
        Refusal{"tab_before_colon", with_field("X-A\t: b")},
        Refusal{"empty_field_name", with_field(": b")},
        Refusal{"space_first_field", "HTTP/1.1 200 OK\r\n X-A: b\r\nContent-Length: 0\r\n\r\n"},
        Refusal{"no_colon", with_field("X-A")}, Refusal{"separator_in_name", with_field("X(A): b")},
        Refusal{"utf8_in_name", with_field("X-\xc3\xa9: b")}));

INSTANTIATE_TEST_SUITE_P(
    ChunkedBody, RefusedResponse,
    ::testing::Values(
        // llhttp skips the two bytes after chunk data, whatever they are.
        Refusal{"junk_after_chunk_data", chunked("3\r\nabcXX0\r\n\r\n")},
        Refusal{"lf_after_chunk_data", chunked("3\r\nabc\n0\r\n\r\n")},
        Refusal{"cr_x_after_chunk_data", chunked("3\r\nabc\rX0\r\n\r\n")},
        Refusal{"no_crlf_after_chunk_data", chunked("3\r\nabc0\r\n\r\n")},
        Refusal{"chunk_too_long", chunked("3\r\nabcd\r\n0\r\n\r\n")},
        Refusal{"bare_lf_chunk_size", chunked("3\nabc\r\n0\r\n\r\n")},
        Refusal{"cr_x_chunk_size", chunked("3\rXabc\r\n0\r\n\r\n")},
        Refusal{"space_after_chunk_size", chunked("3 \r\nabc\r\n0\r\n\r\n")},
        Refusal{"space_before_chunk_size", chunked(" 3\r\nabc\r\n0\r\n\r\n")},
        Refusal{"hex_prefix", chunked("0x3\r\nabc\r\n0\r\n\r\n")},
        Refusal{"negative_chunk_size", chunked("-3\r\nabc\r\n0\r\n\r\n")},
        Refusal{"empty_chunk_size", chunked("\r\nabc\r\n0\r\n\r\n")},
        Refusal{"chunk_size_overflow", chunked("10000000000000000003\r\nabc\r\n0\r\n\r\n")},
        Refusal{"bare_lf_in_chunk_ext", chunked("3;a=b\nabc\r\n0\r\n\r\n")},
        Refusal{"control_in_chunk_ext", chunked("3;a=\x01\r\nabc\r\n0\r\n\r\n")},
        Refusal{"bare_lf_last_chunk", chunked("0\n\r\n")},
        Refusal{"bare_lf_ends_trailers", chunked("0\r\n\n")},
        Refusal{"cr_x_ends_trailers", chunked("0\r\n\rX")},
        Refusal{"bare_lf_in_trailer", chunked("0\r\nX-T: 1\n\r\n")},
        Refusal{"obs_fold_in_trailer", chunked("0\r\nX-T: 1\r\n 2\r\n\r\n")},
        Refusal{"space_before_colon_in_trailer", chunked("0\r\nX-T : 1\r\n\r\n")},
        Refusal{"empty_trailer_name", chunked("0\r\n: 1\r\n\r\n")},
        Refusal{"trailer_section_too_large",
                chunked("0\r\nX-T: " + std::string(kMax, 't') + "\r\n\r\n")},
        Refusal{"chunk_ext_too_long", chunked("3;" + std::string(kMax + 1, 'e') + "\r\n")}));

INSTANTIATE_TEST_SUITE_P(
    Framing, RefusedResponse,
    ::testing::Values(
        Refusal{"two_content_lengths",
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde"},
        Refusal{"repeated_content_length",
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"},
        Refusal{"content_length_list", "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc"},
        Refusal{"content_length_two_numbers", "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n"},
        Refusal{"negative_content_length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"},
        Refusal{"plus_content_length", "HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\nabc"},
        Refusal{"hex_content_length", "HTTP/1.1 200 OK\r\nContent-Length: 0x3\r\n\r\nabc"},
        Refusal{"empty_content_length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n"},
        // llhttp takes 2^64-1, which as an int64_t would read "length unknown".
        Refusal{"content_length_2_64_minus_1",
                "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\nabc"},
        Refusal{"content_length_2_63",
                "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\nabc"},
        Refusal{"content_length_overflow",
                "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\nabc"},
        Refusal{"content_length_and_chunked",
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                "0\r\n\r\n"},
        Refusal{"chunked_and_content_length",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
                "0\r\n\r\n"},
        Refusal{"gzip_and_content_length",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc"},
        Refusal{"te_gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc"},
        Refusal{"te_identity", "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nabc"},
        Refusal{"te_gzip_chunked",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
        Refusal{"te_chunked_gzip",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nabc"},
        Refusal{"te_chunked_then_gzip",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n"
                "abc"},
        Refusal{"te_chunked_twice",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"
                "\r\n3\r\nabc\r\n0\r\n\r\n"},
        Refusal{"te_empty", "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\nabc"},
        Refusal{"te_chunked_junk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunkedx\r\n\r\nabc"},
        Refusal{"chunked_in_http_1_0",
                "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
        Refusal{"head_section_too_large",
                "HTTP/1.1 200 OK\r\nX-A: " + std::string(kMax, 'a') + "\r\n\r\n"},
        Refusal{"status_line_too_large",
                "HTTP/1.1 200 " + std::string(kMax, 'r') + "\r\nContent-Length: 0\r\n\r\n"}));

INSTANTIATE_TEST_SUITE_P(
    Interim, RefusedResponse,
    ::testing::Values(
        // llhttp reads a body for a 1xx that announces one, and the final response from the
        // middle of it.
        Refusal{"interim_content_length",
                "HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\nHTTP/" + kOk},
        Refusal{"interim_chunked",
                "HTTP/1.1 103 Early Hints\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + kOk},
        Refusal{"interim_closes", "HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\n" + kOk},
        Refusal{"interim_in_http_1_0", "HTTP/1.0 100 Continue\r\n\r\n" + kOk},
        Refusal{"bare_lf_after_interim", "HTTP/1.1 100 Continue\r\n\r\n\n" + kOk},
        Refusal{"crlf_after_interim", "HTTP/1.1 100 Continue\r\n\r\n\r\n" + kOk},
        Refusal{"cr_x_ends_interim", "HTTP/1.1 100 Continue\r\n\rX" + kOk},
        Refusal{"bad_line_in_final_after_interim",
                "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n"
                "Content-Length: 0\r\n\r\n"},
        Refusal{"endless_interim", [] {
                  std::string s;
                  while (s.size() <= kMax)
                    s += "HTTP/1.1 102 Processing\r\n\r\n";
                  return s + kOk;
                }()}));

// ---- acceptance ----

struct Accepted {
  const char* name;
  std::string response;
  bool head_request = false;
  bool eof = false; // close-delimited: complete only at EOF
};

void PrintTo(const Accepted& a, std::ostream* os) {
  *os << a.name;
}

class AcceptedResponse : public ::testing::TestWithParam<Accepted> {};

// Every split reads the response the same way, and the parser takes exactly the response.
TEST_P(AcceptedResponse, AnySplitReadsTheSame) {
  const Accepted& a = GetParam();
  const std::string extra = a.eof ? "" : "HTTP/1.1 200 OK\r\n\r\n"; // not scanned, not taken
  Outcome whole = parse(a.response + extra, {.head_request = a.head_request, .eof = a.eof});
  ASSERT_FALSE(whole.failed) << whole.reason;
  EXPECT_TRUE(whole.done);
  EXPECT_EQ(whole.used, a.response.size());
  ASSERT_EQ(whole.responses.size(), 1u);
  EXPECT_TRUE(whole.responses[0].ended);
  Outcome bytes =
      parse(a.response + extra, {.head_request = a.head_request, .step = 1, .eof = a.eof});
  EXPECT_TRUE(bytes.same_as(whole)) << bytes.reason;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    Outcome split =
        parse(a.response + extra, {.head_request = a.head_request, .seed = seed, .eof = a.eof});
    EXPECT_TRUE(split.same_as(whole)) << "seed " << seed << ": " << split.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Responses, AcceptedResponse,
    ::testing::Values(
        Accepted{"content_length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"},
        Accepted{"no_reason_phrase", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"},
        Accepted{"empty_reason_phrase", "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n"},
        Accepted{"reason_with_tab_spaces_obs_text",
                 "HTTP/1.1 404  Not\tFound \xc3\xa9\r\nContent-Length: 0\r\n\r\n"},
        Accepted{"status_600_passes", "HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n"},
        Accepted{"no_fields", "HTTP/1.1 304 Not Modified\r\n\r\n"},
        Accepted{"http_1_0_keep_alive",
                 "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"},
        Accepted{"value_bytes", "HTTP/1.1 200 OK\r\nX-A:\t v \xff\x80 \t\r\nX-B:\r\n"
                                "Content-Length: 0\r\n\r\n"},
        Accepted{"chunked_with_ext_and_trailers",
                 chunked("3;a=\"b c\"\r\nabc\r\nA;d\r\n0123456789\r\n0\r\nX-T: 1\r\n"
                         "X-U: 2\r\n\r\n")},
        // Chunk data is skipped by count: bytes in it that look like framing are data.
        Accepted{"framing_inside_chunk_data", chunked("f\r\n0\r\n\r\nHTTP/1.1 \n\r\n0\r\n\r\n")},
        Accepted{"upper_case_hex", chunked("1A\r\n" + std::string(26, 'x') + "\r\n0\r\n\r\n")},
        Accepted{"interim_then_final",
                 "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload"
                 "\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
        Accepted{"interim_then_chunked",
                 "HTTP/1.1 102 Processing\r\n\r\n" + chunked("2\r\nok\r\n0\r\n\r\n")},
        Accepted{"head_with_content_length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
                 true},
        Accepted{"head_with_chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                 true},
        // The fields describe the GET response; they frame nothing here.
        Accepted{"head_with_other_coding",
                 "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", true},
        Accepted{"not_modified_with_length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n"
                                             "\r\n"},
        Accepted{"no_content_with_zero_length", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n"
                                                "\r\n"},
        Accepted{"close_delimited", "HTTP/1.1 200 OK\r\n\r\nuntil\r\n\nEOF", false, true},
        Accepted{"close_delimited_http_1_0", "HTTP/1.0 200 OK\r\n\r\nold", false, true},
        Accepted{"empty_close_delimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", false,
                 true}));

// ---- what the head says ----

Response only(const Outcome& o) {
  EXPECT_FALSE(o.failed) << o.reason;
  EXPECT_EQ(o.responses.size(), 1u);
  return o.responses.empty() ? Response{} : o.responses[0];
}

TEST(Http1ResponseParser, ContentLengthAndKeepAliveHint) {
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nKeep-Alive: timeout=7, max=9\r\n"
                  "X-A: b  \r\n\r\nhelloEXTRA";
  Outcome o = parse(r);
  EXPECT_EQ(o.used, r.size() - 5);
  EXPECT_TRUE(o.done);
  Response h = only(o);
  EXPECT_EQ(h.body, "hello");
  EXPECT_EQ(h.content_length, 5);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_DOUBLE_EQ(h.keepalive_timeout, 7);
  EXPECT_EQ(h.headers,
            (Fields{{"content-length", "5"}, {"keep-alive", "timeout=7, max=9"}, {"x-a", "b"}}));
}

TEST(Http1ResponseParser, InterimResponsesAreSkipped) {
  std::string r = "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\nHTTP/1.1 201 Created\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n";
  Response h = only(parse(r, {.step = 1}));
  EXPECT_EQ(h.status, 201);
  EXPECT_TRUE(h.chunked);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_EQ(h.body, "abc");
  EXPECT_EQ(h.headers, (Fields{{"transfer-encoding", "chunked"}}));
  EXPECT_EQ(h.trailers, (Fields{{"x-sum", "9"}}));
}

TEST(Http1ResponseParser, InterimHeadsShareOneBudget) {
  // Each interim head fits, and so do all of them together.
  std::string hint = "HTTP/1.1 103 Early Hints\r\nLink: " + std::string(1000, 'l') + "\r\n\r\n";
  std::string r = hint + hint + hint + kOk;
  EXPECT_EQ(only(parse(r)).status, 200);
  // One more does not fit in kMax.
  Outcome o = parse(hint + r);
  EXPECT_TRUE(o.failed);
  EXPECT_TRUE(o.responses.empty());
}

TEST(Http1ResponseParser, ReasonPhraseIsOptional) {
  for (std::string line : {"HTTP/1.1 200\r\n", "HTTP/1.1 200 \r\n", "HTTP/1.1 200 OK\r\n"}) {
    Response h = only(parse(line + "Content-Length: 0\r\n\r\n", {.step = 1}));
    EXPECT_EQ(h.status, 200) << line;
    EXPECT_TRUE(h.ended) << line;
  }
}

TEST(Http1ResponseParser, HeadResponseHasNoBody) {
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n";
  Outcome o = parse(r + "junk", {.head_request = true});
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.used, r.size());
  Response h = only(o);
  EXPECT_TRUE(h.body.empty());
  EXPECT_EQ(h.content_length, 100); // passed on: the length the GET would have had
  EXPECT_TRUE(h.keep_alive);
}

TEST(Http1ResponseParser, HeadResponseWithoutLengthKeepsTheConnection) {
  // It ends at the empty line whatever it says, so the connection stays usable.
  Response h = only(parse("HTTP/1.1 200 OK\r\n\r\n", {.head_request = true}));
  EXPECT_TRUE(h.ended);
  EXPECT_TRUE(h.keep_alive);
  EXPECT_EQ(h.content_length, -1);
}

TEST(Http1ResponseParser, NoContentThatAnnouncesABodyEndsTheConnection) {
  // A 204 has no body (RFC 9112 6.3), but one announcing a body may be followed by it, where
  // the next response would be read.
  for (std::string field : {"Content-Length: 5", "Transfer-Encoding: chunked"}) {
    std::string r = "HTTP/1.1 204 No Content\r\n" + field + "\r\n\r\n";
    Outcome o = parse(r + "hello");
    EXPECT_TRUE(o.done) << field;
    EXPECT_EQ(o.used, r.size()) << field;
    Response h = only(o);
    EXPECT_TRUE(h.body.empty()) << field;
    EXPECT_FALSE(h.keep_alive) << field;
  }
  EXPECT_TRUE(only(parse("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")).keep_alive);
  EXPECT_TRUE(only(parse("HTTP/1.1 204 No Content\r\n\r\n")).keep_alive);
}

TEST(Http1ResponseParser, NotModifiedHasNoBody) {
  std::string r = "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n";
  Outcome o = parse(r + "0\r\n\r\n");
  EXPECT_EQ(o.used, r.size());
  Response h = only(o);
  EXPECT_TRUE(h.ended);
  EXPECT_TRUE(h.keep_alive);
}

TEST(Http1ResponseParser, KeepAlive) {
  struct Case {
    std::string response;
    bool keep_alive;
  };
  for (const Case& c : std::vector<Case>{
           {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
           {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
           {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
           {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", true},
       }) {
    EXPECT_EQ(only(parse(c.response)).keep_alive, c.keep_alive) << c.response;
  }
}

TEST(Http1ResponseParser, CloseDelimitedBodyEndsAtEof) {
  Recorder sink;
  UpstreamResponseHead head;
  Arena arena;
  Http1ResponseParser parser(sink, head, arena, kMax);
  parser.start(false);
  std::string r = "HTTP/1.1 200 OK\r\n\r\npartial";
  EXPECT_EQ(parser.feed(r.data(), r.size()), r.size());
  EXPECT_FALSE(parser.done());
  EXPECT_FALSE(head.keep_alive);
  EXPECT_EQ(head.content_length, -1);
  EXPECT_TRUE(parser.finish());
  EXPECT_TRUE(parser.done());
  ASSERT_EQ(sink.responses.size(), 1u);
  EXPECT_EQ(sink.responses[0].body, "partial");
  EXPECT_TRUE(sink.responses[0].ended);
}

TEST(Http1ResponseParser, CutResponsesAreNotComplete) {
  for (const std::string& r : std::vector<std::string>{
           "", "HTTP/1.1 200 OK\r\nContent-Len", "HTTP/1.1 200 OK\r\n",
           "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "HTTP/1.1 100 Continue\r\n\r\n",
           chunked("3\r\nabc\r\n"), chunked("a\r\nabc"), chunked("0\r\nX-T: 1\r\n")}) {
    Recorder sink;
    UpstreamResponseHead head;
    Arena arena;
    Http1ResponseParser parser(sink, head, arena, kMax);
    parser.start(false);
    parser.feed(r.data(), r.size());
    EXPECT_FALSE(parser.finish()) << r;
    EXPECT_FALSE(parser.done()) << r;
    for (const auto& resp : sink.responses)
      EXPECT_FALSE(resp.ended) << r;
  }
}

TEST(Http1ResponseParser, HeadLimitIsExact) {
  // The whole head counts: status line, fields, and the empty line.
  std::string start = "HTTP/1.1 200 OK\r\nX: ";
  std::string end = "\r\nContent-Length: 0\r\n\r\n";
  std::string fits = start + std::string(kMax - start.size() - end.size(), 'v') + end;
  ASSERT_EQ(fits.size(), kMax);
  EXPECT_TRUE(only(parse(fits, {.step = 7})).ended);
  std::string over = start + std::string(kMax - start.size() - end.size() + 1, 'v') + end;
  Outcome o = parse(over, {.step = 7});
  EXPECT_TRUE(o.failed);
  EXPECT_TRUE(o.responses.empty());
}

TEST(Http1ResponseParser, FramingFaultWithTheHeadIsFoundBeforeTheHeadIsHandedOn) {
  // One read holds the head and a bad chunk: the client gets a 502, not a cut response.
  Outcome o = parse(chunked("3\r\nabcXX0\r\n\r\n"));
  EXPECT_TRUE(o.failed);
  EXPECT_TRUE(o.responses.empty());
  // In a later read, it is found before any of that read's body is handed on.
  Outcome later =
      parse(chunked("3\r\nabc\r\n4\r\nwxyzXX0\r\n\r\n"), {.step = chunked("3\r\nabc\r\n").size()});
  EXPECT_TRUE(later.failed);
  ASSERT_EQ(later.responses.size(), 1u);
  EXPECT_EQ(later.responses[0].body, "abc");
}

TEST(Http1ResponseParser, ReusableAcrossResponses) {
  Recorder sink;
  UpstreamResponseHead head;
  Arena arena;
  Http1ResponseParser parser(sink, head, arena, kMax);
  const std::string responses[] = {
      "HTTP/1.1 204 No Content\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      chunked("2\r\nok\r\n0\r\nX-T: 1\r\n\r\n"),
      "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", // to HEAD
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
  };
  for (int round = 0; round < 2; ++round) {
    for (const auto& r : responses) {
      bool head_request = r.find("Content-Length: 7") != std::string::npos;
      parser.start(head_request);
      EXPECT_EQ(parser.feed(r.data(), r.size()), r.size()) << r;
      EXPECT_TRUE(parser.done()) << parser.error_reason();
      EXPECT_TRUE(head.keep_alive) << r;
    }
    // A refused response leaves nothing behind for the next start().
    parser.start(false);
    std::string bad = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\rX";
    parser.feed(bad.data(), bad.size());
    EXPECT_TRUE(parser.failed());
  }
  EXPECT_EQ(sink.responses.size(), 10u);
  for (const auto& r : sink.responses)
    EXPECT_TRUE(r.ended);
}

TEST(Http1ResponseParser, ScansFromTheFirstResponseWithoutStart) {
  // The constructor starts the first response: nothing reads unscanned bytes.
  Recorder sink;
  UpstreamResponseHead head;
  Arena arena;
  Http1ResponseParser parser(sink, head, arena, kMax);
  std::string bad = "HTTP/1.1 200 OK\r\nContent-Length: 0\n\n";
  parser.feed(bad.data(), bad.size());
  EXPECT_TRUE(parser.failed());
}

TEST(Http1ResponseParser, NothingAfterTheEndIsScannedOrTaken) {
  // What follows a response is no request's: the upstream sees it left over and does not
  // reuse the connection. It is neither consumed nor a reason to refuse this response.
  std::string r = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na";
  for (std::string after : {"\n", "\r\n", "garbage\rX", "HTTP/1.1 200 OK\r\n\r\n"}) {
    Outcome o = parse(r + after);
    EXPECT_TRUE(o.done) << o.reason;
    EXPECT_EQ(o.used, r.size());
  }
}

} // namespace
} // namespace portico::http
