// Zstandard (RFC 8878) through libzstd, its window bounded (kZstdWindowBits).
#include "compression/encoder.h"
#include "compression/state_memory.h"

// ZSTD_customMem and ZSTD_createCCtx_advanced are in zstd's "experimental" section, which
// Debian's libzstd.so.1 exports: the state is allocated through state_memory.h like the others.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

namespace portico::compression {

namespace {

class ZstdEncoder final : public Encoder {
public:
  bool init(int level, int64_t size_hint) {
    ZSTD_customMem mem{[](void*, size_t n) { return state_alloc(n); },
                       [](void*, void* p) { state_free(p); }, nullptr};
    c_ = ZSTD_createCCtx_advanced(mem);
    if (!c_)
      return false;
    // A known length lets zstd size its tables for it (and its window: the body, at most
    // kZstdWindowBits); the proxy holds the upstream to that length, or aborts.
    return !ZSTD_isError(ZSTD_CCtx_setParameter(c_, ZSTD_c_compressionLevel, level)) &&
           !ZSTD_isError(ZSTD_CCtx_setParameter(
               c_, ZSTD_c_windowLog,
               window_bits_for(size_hint, ZSTD_WINDOWLOG_MIN, kZstdWindowBits))) &&
           (size_hint < 0 || !ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(
                                 c_, static_cast<unsigned long long>(size_hint))));
  }
  ~ZstdEncoder() override { ZSTD_freeCCtx(c_); }

  bool encode(std::string_view in, Flush flush, Sink sink, void* ctx) override {
    ZSTD_EndDirective op = flush == Flush::FINISH ? ZSTD_e_end
                           : flush == Flush::SYNC ? ZSTD_e_flush
                                                  : ZSTD_e_continue;
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    char out[kOutputPiece];
    for (;;) {
      ZSTD_outBuffer output{out, sizeof out, 0};
      size_t left = ZSTD_compressStream2(c_, &output, &input, op);
      if (ZSTD_isError(left))
        return false;
      if (output.pos)
        sink(ctx, {out, output.pos});
      // continue: done once the input is taken; flush and end: once nothing is left to write.
      if (op == ZSTD_e_continue ? input.pos == input.size : left == 0)
        return true;
    }
  }

private:
  ZSTD_CCtx* c_ = nullptr;
};

} // namespace

std::unique_ptr<Encoder> make_zstd(int level, int64_t size_hint) {
  return made<ZstdEncoder>(level, size_hint);
}

} // namespace portico::compression
