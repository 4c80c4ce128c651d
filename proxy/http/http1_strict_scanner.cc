#include "http/http1_strict_scanner.h"

#include "http/field_value.h"
#include "http/swar.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>

namespace portico::http {

namespace {

using ByteClass = std::array<bool, 256>;

// tchar (RFC 9110 5.6.2): methods and field names.
constexpr ByteClass kToken = [] {
  ByteClass t{};
  for (unsigned char c : std::string_view("!#$%&'*+-.^_`|~"))
    t[c] = true;
  for (int c = '0'; c <= '9'; ++c)
    t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c)
    t[c] = t[c - 32] = true;
  return t;
}();

// The target is visible ASCII only: no tab, no raw UTF-8 (clients percent-encode it), so that
// every reader splits the request line at the same two spaces; and no "#", since a fragment is
// never sent (RFC 9112 3.2) and readers disagree on where the path ends.
constexpr ByteClass kTarget = [] {
  ByteClass t{};
  for (int c = 0x21; c < 0x7f; ++c)
    t[c] = c != '#';
  return t;
}();

constexpr std::string_view kHttpSlash = "HTTP/";

} // namespace

bool is_valid_request_target(std::string_view target) {
  if (target.empty())
    return false;
  for (unsigned char c : target)
    if (!kTarget[c])
      return false;
  return true;
}

namespace {

// Bounds a chunk size far above any real body, and far below overflow in llhttp or here.
constexpr uint64_t kMaxChunkSize = uint64_t{1} << 60;

using swar::kHighs;
using swar::load8;

// Values and targets are most of a head: skip their plain bytes eight at a time; the word that
// holds the stop says where it is (values: skip_field_value).
const unsigned char* skip_target(const unsigned char* p, const unsigned char* end) {
  while (end - p >= 8) {
    uint64_t w = load8(p);
    if (uint64_t stop = swar::below_mask(w, 0x21) | (w & kHighs) | swar::equal_mask(w, 0x7f) |
                        swar::equal_mask(w, '#'))
      return p + swar::first_flagged(stop);
    p += 8;
  }
  while (p < end && kTarget[*p])
    ++p;
  return p;
}

// One head's marks at a time per thread: a scan() and the fast path that reads its marks run
// in one call of a parser's feed, and a connection's buffer is not a place for 512 bytes that
// are idle between heads.
thread_local Http1StrictScanner::Mark tls_marks[Http1StrictScanner::kMaxMarks];

int hex_value(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c |= 0x20;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

} // namespace

void Http1StrictScanner::start_head(size_t max_bytes) {
  if (kind_ == Kind::REQUEST) {
    state_ = State::LEADING;
  } else {
    state_ = State::VERSION;
    version_pos_ = 0;
  }
  counting_ = true;
  trailers_ = false;
  max_ = max_bytes;
  bytes_ = 0;
  request_line_bytes_ = 0;
}

void Http1StrictScanner::start_chunked(size_t max_bytes) {
  state_ = State::CHUNK_START;
  counting_ = false;
  trailers_ = false;
  max_ = max_bytes;
  bytes_ = 0;
}

size_t Http1StrictScanner::fail(ParseError e, const char* reason) {
  state_ = State::FAILED;
  error_ = e;
  reason_ = reason;
  return 0;
}

const Http1StrictScanner::Mark* Http1StrictScanner::marks() const {
  return marking_ && state_ == State::DONE ? tls_marks : nullptr;
}

size_t Http1StrictScanner::scan(const char* data, size_t len) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  const auto* const base = p;
  const auto* const end = p + len;
  const unsigned char* counted_from = p;
  if (!scanning())
    return 0;
  // Marks are taken for a head that this call scans from its first byte.
  marking_ = bytes_ == 0 && !trailers_ &&
             (state_ == State::LEADING || (state_ == State::VERSION && version_pos_ == 0));
  marks_ = 0;
  while (p < end && state_ != State::DONE) {
    switch (state_) {
    case State::IDLE:
    case State::DONE:
    case State::FAILED: return 0; // not reached: the loop runs only while scanning

    case State::LEADING:
      if (*p == '\r') {
        ++p;
        state_ = State::LEADING_LF;
      } else if (kToken[*p]) {
        state_ = State::METHOD;
      } else {
        return fail(ParseError::BAD_REQUEST,
                    *p == '\n' ? "bare LF in request head" : "bad request line");
      }
      break;
    case State::LEADING_LF:
    case State::LINE_LF:
    case State::END_LF:
    case State::CHUNK_SIZE_LF:
    case State::CHUNK_DATA_LF:
      if (*p != '\n')
        return fail(ParseError::BAD_REQUEST, "CR not followed by LF");
      ++p;
      if (state_ == State::LEADING_LF) {
        state_ = State::LEADING;
      } else if (state_ == State::LINE_LF) {
        state_ = State::FIELD_START;
      } else if (state_ == State::END_LF) {
        state_ = State::DONE;
      } else if (state_ == State::CHUNK_DATA_LF) {
        state_ = State::CHUNK_START;
      } else if (chunk_left_ > 0) {
        state_ = State::CHUNK_DATA;
      } else {
        // The last chunk: the trailer section follows, bounded like a head.
        state_ = State::FIELD_START;
        trailers_ = counting_ = true;
        counted_from = p;
      }
      break;

    case State::METHOD:
      while (p < end && kToken[*p])
        ++p;
      if (p == end)
        break;
      if (*p != ' ')
        return fail(ParseError::BAD_REQUEST, "bad method");
      ++p;
      state_ = State::TARGET_START;
      break;
    case State::TARGET_START:
      if (!kTarget[*p])
        return fail(ParseError::BAD_REQUEST, "bad request target");
      state_ = State::TARGET;
      break;
    case State::TARGET:
      p = skip_target(p, end);
      if (p == end)
        break;
      if (*p != ' ')
        return fail(ParseError::BAD_REQUEST, "bad character in request target");
      ++p;
      state_ = State::VERSION;
      version_pos_ = 0;
      break;
    case State::VERSION: {
      // The whole version at once when the buffer holds it, as it nearly always does; byte by
      // byte otherwise, each byte decided as it comes.
      const unsigned char term = kind_ == Kind::REQUEST ? '\r' : ' ';
      if (version_pos_ == 0 && end - p >= 9 && std::memcmp(p, "HTTP/1.", 7) == 0 &&
          (p[7] == '0' || p[7] == '1') && p[8] == term) {
        p += 9;
      } else {
        unsigned char c = *p++;
        uint8_t i = version_pos_++;
        bool ok;
        if (i < kHttpSlash.size())
          ok = c == static_cast<unsigned char>(kHttpSlash[i]);
        else if (i == 5 || i == 7)
          ok = c >= '0' && c <= '9';
        else if (i == 6)
          ok = c == '.';
        else
          ok = c == term;
        if (!ok)
          return fail(ParseError::BAD_REQUEST, kind_ == Kind::RESPONSE && (i == 0 || i == 8)
                                                   ? "bad status line"
                                                   : "bad HTTP version");
        if (i == 5) {
          major_ = static_cast<char>(c);
        } else if (i == 7) {
          // Decided here, not at the CR: llhttp refuses versions it does not know at this byte.
          if (major_ != '1' || (c != '0' && c != '1'))
            return fail(ParseError::BAD_VERSION, "unsupported HTTP version");
        }
        if (i < 8)
          break;
      }
      // A request line ends here; a status line goes on to the status code.
      if (kind_ == Kind::REQUEST) {
        state_ = State::LINE_LF;
        request_line_bytes_ = bytes_ + static_cast<size_t>(p - counted_from);
        break;
      }
      state_ = State::STATUS_CODE;
      version_pos_ = 0;
      [[fallthrough]];
    }
    case State::STATUS_CODE:
      // Exactly three digits: llhttp reads any number of them, and a code under 100 (which
      // llhttp takes) has no meaning a client could agree on.
      for (; p < end && version_pos_ < 3; ++p, ++version_pos_)
        if (*p < '0' || *p > '9' || (version_pos_ == 0 && *p == '0'))
          return fail(ParseError::BAD_REQUEST, "bad status code");
      if (version_pos_ < 3)
        break;
      state_ = State::STATUS_END;
      [[fallthrough]];
    case State::STATUS_END:
      if (p == end)
        break;
      if (*p == '\r') { // no reason phrase, and no SP before it
        ++p;
        state_ = State::LINE_LF;
        break;
      }
      if (*p != ' ')
        return fail(ParseError::BAD_REQUEST,
                    *p == '\n' ? "bare LF in response head" : "bad status code");
      ++p;
      state_ = State::REASON;
      [[fallthrough]];
    case State::REASON:
      // reason-phrase = *( HTAB / SP / VCHAR / obs-text ): the bytes of a field value.
      p = skip_field_value(p, end);
      if (p == end)
        break;
      if (*p != '\r')
        return fail(ParseError::BAD_REQUEST,
                    *p == '\n' ? "bare LF in response head" : "control character in reason phrase");
      ++p;
      take_lf(p, end);
      break;

    // A field line runs on from state to state without another turn of the loop: with the LF
    // taken in FIELD_VALUE, one turn per line is what keeps the scan of a head cheap.
    case State::FIELD_START:
      if (*p == '\r') {
        ++p;
        state_ = State::END_LF;
        break;
      }
      if (!kToken[*p]) {
        if (*p == ' ' || *p == '\t')
          return fail(ParseError::BAD_REQUEST, "obs-fold or whitespace before a field name");
        return fail(ParseError::BAD_REQUEST,
                    *p == '\n' ? head_reason("bare LF in request head", "bare LF in response head")
                               : "bad header field name");
      }
      state_ = State::FIELD_NAME;
      [[fallthrough]];
    case State::FIELD_NAME:
      while (p < end && kToken[*p])
        ++p;
      if (p == end)
        break;
      if (*p != ':')
        return fail(ParseError::BAD_REQUEST, *p == ' ' || *p == '\t'
                                                 ? "whitespace between field name and colon"
                                                 : "bad header field name");
      if (marking_) {
        if (marks_ < kMaxMarks)
          tls_marks[marks_].colon = static_cast<uint32_t>(p - base);
        else
          marking_ = false;
      }
      ++p;
      state_ = State::FIELD_VALUE;
      [[fallthrough]];
    case State::FIELD_VALUE:
      p = skip_field_value(p, end);
      if (p == end)
        break;
      if (*p != '\r')
        return fail(ParseError::BAD_REQUEST,
                    *p == '\n' ? head_reason("bare LF in request head", "bare LF in response head")
                               : "control character in field value");
      if (marking_)
        tls_marks[marks_++].cr = static_cast<uint32_t>(p - base);
      ++p;
      take_lf(p, end);
      break;

    case State::CHUNK_START:
      if (hex_value(*p) < 0)
        return fail(ParseError::BAD_REQUEST, "bad chunk size");
      chunk_left_ = 0;
      ext_bytes_ = 0;
      state_ = State::CHUNK_SIZE;
      [[fallthrough]];
    case State::CHUNK_SIZE:
      for (int v; p < end && (v = hex_value(*p)) >= 0; ++p) {
        chunk_left_ = chunk_left_ * 16 + static_cast<uint64_t>(v);
        // ">=": below the bound, the next "* 16 + 15" cannot wrap round.
        if (chunk_left_ >= kMaxChunkSize)
          return fail(ParseError::BAD_REQUEST, "chunk size overflow");
      }
      if (p == end)
        break;
      if (*p == ';') {
        state_ = State::CHUNK_EXT;
      } else if (*p == '\r') {
        state_ = State::CHUNK_SIZE_LF;
        // As for field lines; the last chunk goes the long way, to start its trailers.
        if (end - p >= 2 && p[1] == '\n' && chunk_left_ > 0) {
          ++p;
          state_ = State::CHUNK_DATA;
        }
      } else {
        return fail(ParseError::BAD_REQUEST, "bad chunk size");
      }
      ++p;
      break;
    case State::CHUNK_EXT: {
      const unsigned char* from = p;
      // Held to a field value's bytes; llhttp checks the extensions' grammar.
      while (p < end && kFieldValueBytes[*p])
        ++p;
      ext_bytes_ += static_cast<size_t>(p - from);
      if (ext_bytes_ > max_)
        return fail(ParseError::BAD_REQUEST, "chunk extensions too long");
      if (p == end)
        break;
      if (*p != '\r')
        return fail(ParseError::BAD_REQUEST,
                    *p == '\n' ? "bare LF in chunk-size line" : "control character in chunk line");
      ++p;
      state_ = State::CHUNK_SIZE_LF;
      break;
    }
    case State::CHUNK_DATA: {
      size_t n =
          static_cast<size_t>(std::min<uint64_t>(chunk_left_, static_cast<uint64_t>(end - p)));
      p += n;
      chunk_left_ -= n;
      if (chunk_left_ > 0)
        break;
      if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') {
        p += 2;
        state_ = State::CHUNK_START;
      } else {
        state_ = State::CHUNK_DATA_CR;
      }
      break;
    }
    case State::CHUNK_DATA_CR:
      if (*p != '\r')
        return fail(ParseError::BAD_REQUEST, "chunk data not followed by CRLF");
      ++p;
      state_ = State::CHUNK_DATA_LF;
      break;
    }
  }
  size_t scanned = static_cast<size_t>(p - reinterpret_cast<const unsigned char*>(data));
  if (counting_) {
    bytes_ += static_cast<size_t>(p - counted_from);
    if (bytes_ > max_) {
      if (trailers_)
        return fail(ParseError::HEADERS_TOO_LARGE, "trailer section too large");
      if (kind_ == Kind::RESPONSE)
        return fail(ParseError::HEADERS_TOO_LARGE, "response header section too large");
      // The target is the only part of a request line that can be long.
      if (request_line_bytes_ == 0 || request_line_bytes_ > max_)
        return fail(ParseError::URI_TOO_LONG, "request line too long");
      return fail(ParseError::HEADERS_TOO_LARGE, "header section too large");
    }
  }
  if (state_ == State::DONE)
    counting_ = false;
  return scanned;
}

} // namespace portico::http
