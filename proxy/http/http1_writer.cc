#include "http/http1_writer.h"

#include <charconv>

namespace portico::http {

void append_decimal(core::ByteQueue& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

void append_chunk_size(core::ByteQueue& out, size_t size) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, size, 16);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
  out.append("\r\n");
}

void append_chunk(core::ByteQueue& out, std::string_view data) {
  if (data.empty())
    return;
  append_chunk_size(out, data.size());
  out.append(data);
  out.append("\r\n");
}

void append_last_chunk(core::ByteQueue& out, std::span<const Header> trailers) {
  out.append("0\r\n");
  for (const auto& t : trailers)
    append_field(out, t.name, t.value);
  out.append("\r\n");
}

} // namespace portico::http
