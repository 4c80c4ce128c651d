#pragma once
// The content codings the proxy can apply to a response (RFC 9110 8.4.1), by their tokens.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace portico::compression {

enum class Encoding : uint8_t { GZIP, BROTLI, ZSTD, COUNT };
inline constexpr size_t kEncodingCount = static_cast<size_t>(Encoding::COUNT);

// "gzip", "br", "zstd": the Content-Encoding token, and the metrics label.
std::string_view token(Encoding e);
// The coding a token names (case-insensitive; "x-gzip" is gzip, RFC 9110 8.4.1.3).
std::optional<Encoding> encoding_named(std::string_view token);

} // namespace portico::compression
