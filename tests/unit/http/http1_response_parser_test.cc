// Http1ResponseParser: what a strict reader of upstream responses accepts, and what it refuses
// (which the upstream answers with 502, closing the connection). A pooled connection carries
// many clients' exchanges, so every vector runs fed whole, one byte at a time and in random
// pieces: a check that only works when the bytes arrive together is one a backend can split
// around.
#include "http1_response_parser_support.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace portico::http {
namespace {

using namespace test;

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
        // llhttp refuses a tab after the digits; the fast path, fed whole, once took it (found
        // by http1_response_parser_fuzz comparing whole and split readings).
        Refusal{"content_length_trailing_tab", "HTTP/1.1 200 OK\r\nContent-Length: 0\t\r\n\r\n"},
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
                 true},
        // What the fast path reads (a whole head in one buffer, fed whole above) against llhttp
        // (fed a byte at a time): names with capitals, Keep-Alive's timeout, Connection either
        // way, a length with leading zeros, a 204 announcing a body, HTTP/1.0 without
        // keep-alive; and heads it leaves to llhttp (a Connection list, Proxy-Connection).
        Accepted{"fast_fields", "HTTP/1.1 200 OK\r\nServer: x\r\nCONTENT-LENGTH:  007 \r\n"
                                "Keep-Alive: timeout=7, max=9\r\nX-Y: a b\r\n\r\nabcdefg"},
        Accepted{"fast_connection_close",
                 "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 1\r\n\r\nx"},
        Accepted{"fast_no_content_announcing_a_body",
                 "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n"},
        Accepted{"fast_http_1_0_closes", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
        Accepted{"fast_head_request", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nX: y\r\n\r\n", true},
        Accepted{"slow_connection_list", "HTTP/1.1 200 OK\r\nConnection: keep-alive, x\r\n"
                                         "Content-Length: 1\r\n\r\nx"},
        Accepted{"slow_proxy_connection", "HTTP/1.1 200 OK\r\nProxy-Connection: close\r\n"
                                          "Content-Length: 1\r\n\r\nx"}));

} // namespace
} // namespace portico::http
