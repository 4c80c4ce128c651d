// gzip (RFC 1952) through zlib's deflate, as `gzip -LEVEL` writes it.
#include "compression/encoder.h"
#include "compression/state_memory.h"

#include <zlib.h>

namespace portico::compression {

namespace {

class GzipEncoder final : public Encoder {
public:
  bool init(int level, int64_t size_hint) {
    z_.zalloc = [](void*, uInt items, uInt size) -> void* {
      return state_alloc(static_cast<size_t>(items) * size);
    };
    z_.zfree = [](void*, void* p) { state_free(p); };
    z_.opaque = nullptr;
    // windowBits + 16: the gzip wrapper rather than zlib's; memLevel 8 is zlib's default. A
    // window that holds the whole body (and deflate's lookahead) finds every match the
    // largest would, so the output is the same, from less memory.
    int bits = window_bits_for(size_hint < 0 ? -1 : size_hint + 262, 10, kGzipWindowBits);
    ready_ = deflateInit2(&z_, level, Z_DEFLATED, bits + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
    return ready_;
  }
  ~GzipEncoder() override {
    if (ready_)
      deflateEnd(&z_);
  }

  bool encode(std::string_view in, Flush flush, Sink sink, void* ctx) override {
    int mode = flush == Flush::FINISH ? Z_FINISH : flush == Flush::SYNC ? Z_SYNC_FLUSH : Z_NO_FLUSH;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    unsigned char out[kOutputPiece];
    for (;;) {
      z_.next_out = out;
      z_.avail_out = sizeof out;
      int rc = deflate(&z_, mode);
      if (rc == Z_STREAM_ERROR)
        return false;
      size_t made = sizeof out - z_.avail_out;
      if (made)
        sink(ctx, {reinterpret_cast<char*>(out), made});
      if (rc == Z_STREAM_END)
        return true;
      // deflate filled the whole piece: there may be more. Otherwise all input is taken and,
      // for a flush, all of it is out (Z_BUF_ERROR only says there was nothing to do); a
      // finish that stops short of Z_STREAM_END with room left has failed.
      if (z_.avail_out != 0 && z_.avail_in == 0)
        return mode != Z_FINISH;
    }
  }

private:
  z_stream z_{};
  bool ready_ = false;
};

} // namespace

std::unique_ptr<Encoder> make_gzip(int level, int64_t size_hint) {
  return made<GzipEncoder>(level, size_hint);
}

} // namespace portico::compression
