#pragma once
// One response's compressor: bytes in, compressed bytes out to a sink, in pieces of at most
// kOutputPiece. Made only for a response that is compressed and destroyed at its end; its
// state (zlib's, brotli's, zstd's) is allocated through state_memory.h, so that it counts as
// the thread's buffer memory (portico_buffer_bytes, max_buffer_memory).
#include "compression/encoding.h"

#include <cstdint>
#include <memory>
#include <string_view>

namespace portico::compression {

class Encoder {
public:
  enum class Flush : uint8_t {
    NONE,   // more input follows: output only what the coder has ready
    SYNC,   // the input so far must be decodable by the client now (a paused stream)
    FINISH, // the end of the body: the coding's trailer too
  };
  // Called with each piece of output, valid during the call only.
  using Sink = void (*)(void* ctx, std::string_view out);

  static constexpr size_t kOutputPiece = 16 * 1024;

  virtual ~Encoder() = default;
  // False when the library fails (out of memory): the response cannot go on.
  virtual bool encode(std::string_view in, Flush flush, Sink sink, void* ctx) = 0;

  // level: the coding's own scale (gzip 1-9, brotli 0-11, zstd 1-19); size_hint the body's
  // length when known (-1 if not), which lets brotli size its tables. Null on failure.
  static std::unique_ptr<Encoder> make(Encoding e, int level, int64_t size_hint);

  static void* operator new(size_t n);
  static void operator delete(void* p);
};

// A coder of type E whose init(args...) succeeded, or null (each coding's make_NAME).
template <typename E, typename... Args> std::unique_ptr<Encoder> made(Args... args) {
  auto e = std::make_unique<E>();
  if (!e->init(args...))
    return nullptr;
  return e;
}

std::unique_ptr<Encoder> make_gzip(int level, int64_t size_hint);
std::unique_ptr<Encoder> make_brotli(int quality, int64_t size_hint);
std::unique_ptr<Encoder> make_zstd(int level, int64_t size_hint);

// The window for a body of size_hint bytes (-1: unknown): large enough to reach back over all
// of it, within [low, high]. A small response then costs a small compressor.
int window_bits_for(int64_t size_hint, int low, int high);

// The window each coding keeps at most (log2 bytes): what a client must hold to decode, and
// the bulk of a compressor's memory.
inline constexpr int kGzipWindowBits = 15;   // zlib's largest, and its default
inline constexpr int kBrotliWindowBits = 18; // 256 KiB (brotli's default is 4 MiB)
inline constexpr int kZstdWindowBits = 19;   // 512 KiB (RFC 8878 asks clients for 8 MiB)

} // namespace portico::compression
