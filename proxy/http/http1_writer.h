#pragma once
// The small pieces of HTTP/1.1 message framing that both sides write (a server session's
// responses, the proxy's upstream requests): numbers, fields, chunks and the last chunk with
// its trailer section. Everything goes straight into the output queue.
#include "core/byte_queue.h"
#include "http/header.h"

#include <cstdint>
#include <span>

namespace portico::http {

void append_decimal(core::ByteQueue& out, uint64_t v);
// "name: value\r\n"
inline void append_field(core::ByteQueue& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append(": ");
  out.append(value);
  out.append("\r\n");
}
// One chunk of a chunked body: size in hex, CRLF, the bytes, CRLF. Empty data writes nothing
// (a zero-size chunk would end the body).
void append_chunk(core::ByteQueue& out, std::string_view data);
// The chunk-size line alone, for a chunk whose bytes are appended separately.
void append_chunk_size(core::ByteQueue& out, size_t size);
// "0\r\n", the trailer fields, "\r\n": the end of a chunked body.
void append_last_chunk(core::ByteQueue& out, std::span<const Header> trailers);

} // namespace portico::http
