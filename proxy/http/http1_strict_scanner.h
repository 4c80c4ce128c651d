#pragma once
// The line grammar of an HTTP/1 message (RFC 9112), checked over the raw bytes before llhttp
// reads them. llhttp 8 built without LLHTTP_STRICT_MODE (as Debian ships and we build it) reads
// some messages differently from a strict front end: it takes a bare LF for CRLF, skips the byte
// after a CR in places ("\r\n\rX" ends a head, "3\rX" ends a chunk-size line), skips the two
// bytes after chunk data whatever they are, unfolds obs-fold, accepts a space before the colon
// and an empty field name, repeated spaces in the request line, a tab or bytes >= 0x80 in the
// target, a bare LF ending the trailer section. Each of those is a smuggling vector (request
// smuggling from a client, response splitting on a pooled upstream connection), so this scanner
// refuses them all. llhttp stays the parser of record: it still reads and checks the values.
//
// The scanner runs ahead of llhttp over each buffer but never past the end of the section it
// scans (the head, or a chunked body up to the end of its trailers), so a pipelined message
// that follows is scanned only when its turn comes.
#include "http/parse_error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace portico::http {

// A request target (an HTTP/2 :path too) this proxy passes on: visible ASCII, no "#", as the
// HTTP/1 request line requires, so that no upstream reads a different path than the proxy did.
bool is_valid_request_target(std::string_view target);

class Http1StrictScanner {
public:
  // Which start line a head begins with. In RESPONSE mode error() still classifies the fault
  // with the request's codes (BAD_VERSION, HEADERS_TOO_LARGE, else BAD_REQUEST); reason() names
  // it, and whatever the code, a response refused here is answered with 502.
  enum class Kind : uint8_t { REQUEST, RESPONSE };

  explicit Http1StrictScanner(Kind kind = Kind::REQUEST) : kind_(kind) {}

  // A head begins. A request: empty lines may come first (RFC 9112 2.2), then exactly
  // "token SP target SP HTTP/1.d CRLF". A response: no empty line first (2.2 excuses them
  // before a request line only), then "HTTP/1.d SP 3DIGIT", and "SP reason-phrase" (possibly
  // empty) or nothing before the CRLF: a missing reason phrase, with or without its SP, frames
  // nothing, so it is excused (RFC 9112 4). The status code's first digit is not 0. Then field
  // lines, and the empty line. max_bytes bounds the whole head.
  void start_head(size_t max_bytes);
  // The body is chunked: chunk-size lines (extensions allowed), CRLF after each chunk's data,
  // the trailer section (bounded by max_bytes) and its empty line.
  void start_chunked(size_t max_bytes);
  // Nothing to check until the next start: a body of known length, or none.
  void stop() { state_ = State::IDLE; }

  // Scans up to len bytes and returns how many belong to the current section: all of them,
  // or fewer when the section ends inside data (done() turns true). On a violation failed()
  // turns true and the return value is meaningless.
  size_t scan(const char* data, size_t len);

  bool scanning() const {
    return state_ != State::IDLE && state_ != State::DONE && state_ != State::FAILED;
  }
  bool done() const { return state_ == State::DONE; }
  bool failed() const { return state_ == State::FAILED; }
  ParseError error() const { return error_; }
  const char* reason() const { return reason_; }
  // Bytes of the head, or of the trailer section, scanned so far.
  size_t section_bytes() const { return bytes_; }

  // Where each field line of a head lies, as offsets from the data of the scan() call: its
  // colon and its CR. The fast paths split a head with them rather than search it again.
  struct Mark {
    uint32_t colon, cr;
  };
  static constexpr size_t kMaxMarks = 64;
  // The marks of the head just scanned, in order, when one scan() call scanned it whole (from
  // its first byte to the end of its empty line) and it has at most kMaxMarks field lines; null
  // otherwise. Valid until the next scan() on this thread.
  const Mark* marks() const;
  size_t mark_count() const { return marks_; }

private:
  enum class State : uint8_t {
    IDLE,          // no section started (or stopped): scan() must not be called
    LEADING,       // before the request line, where empty lines are ignored
    LEADING_LF,    // CR of an empty line before the request line
    METHOD,        // the method token
    TARGET_START,  // after the SP that follows the method
    TARGET,        // the request target
    VERSION,       // "HTTP/" DIGIT "." DIGIT, after the target or starting a status line
    STATUS_CODE,   // after the SP that follows a response's version: three digits
    STATUS_END,    // after the status code: SP before the reason phrase, or CR
    REASON,        // the reason phrase, up to CR
    LINE_LF,       // CR that ends the request line or a field line
    FIELD_START,   // a field line, or the empty line that ends the section
    FIELD_NAME,    // a field name token
    FIELD_VALUE,   // after the colon, up to CR
    END_LF,        // CR of the empty line that ends the section
    CHUNK_START,   // the first hex digit of a chunk size
    CHUNK_SIZE,    // more hex digits
    CHUNK_EXT,     // ";" chunk extensions up to CR
    CHUNK_SIZE_LF, // CR that ends a chunk-size line
    CHUNK_DATA,    // chunk data, skipped by count
    CHUNK_DATA_CR, // the CR that must follow chunk data
    CHUNK_DATA_LF, // and its LF
    DONE,          // the section ended; scan() returns early with what belonged to it
    FAILED,        // a violation: error() and reason() say which
  };

  size_t fail(ParseError e, const char* reason);
  // After the CR that ends the start line or a field line: lines mostly arrive whole, so their
  // LF is taken here rather than by another turn of the scan loop (LINE_LF refuses any other
  // byte).
  void take_lf(const unsigned char*& p, const unsigned char* end) {
    if (p < end && *p == '\n') {
      ++p;
      state_ = State::FIELD_START;
    } else {
      state_ = State::LINE_LF;
    }
  }
  // The one of two messages that names this scanner's kind of head.
  const char* head_reason(const char* request, const char* response) const {
    return kind_ == Kind::REQUEST ? request : response;
  }

  const Kind kind_;
  State state_ = State::IDLE;
  bool counting_ = false;   // in a section bounded by max_ (head, trailers)
  bool trailers_ = false;   // the field lines are trailers
  uint8_t version_pos_ = 0; // bytes of the version, then digits of the status code, seen
  uint8_t marks_ = 0;       // field lines marked in this head
  bool marking_ = false;    // this scan() call began the head, and no line went unmarked
  char major_ = 0;
  size_t max_ = 0;
  size_t bytes_ = 0;
  size_t request_line_bytes_ = 0; // the head's bytes up to the request line's CR, once seen
  size_t ext_bytes_ = 0;
  uint64_t chunk_left_ = 0; // chunk size while parsing it, then data bytes still to skip
  ParseError error_ = ParseError::NONE;
  const char* reason_ = "";
};

} // namespace portico::http
