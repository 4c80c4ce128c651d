// Brotli (RFC 7932) through libbrotlienc, its window bounded (kBrotliWindowBits).
#include "compression/encoder.h"
#include "compression/state_memory.h"

#include <algorithm>
#include <brotli/encode.h>

namespace portico::compression {

namespace {

class BrotliEncoder final : public Encoder {
public:
  bool init(int quality, int64_t size_hint) {
    s_ = BrotliEncoderCreateInstance([](void*, size_t n) { return state_alloc(n); },
                                     [](void*, void* p) { state_free(p); }, nullptr);
    if (!s_)
      return false;
    BrotliEncoderSetParameter(s_, BROTLI_PARAM_QUALITY, static_cast<uint32_t>(quality));
    BrotliEncoderSetParameter(
        s_, BROTLI_PARAM_LGWIN,
        window_bits_for(size_hint, BROTLI_MIN_WINDOW_BITS, kBrotliWindowBits));
    if (size_hint > 0)
      BrotliEncoderSetParameter(s_, BROTLI_PARAM_SIZE_HINT,
                                static_cast<uint32_t>(std::min<int64_t>(size_hint, 1 << 30)));
    return true;
  }
  ~BrotliEncoder() override {
    if (s_)
      BrotliEncoderDestroyInstance(s_);
  }

  bool encode(std::string_view in, Flush flush, Sink sink, void* ctx) override {
    BrotliEncoderOperation op = flush == Flush::FINISH ? BROTLI_OPERATION_FINISH
                                : flush == Flush::SYNC ? BROTLI_OPERATION_FLUSH
                                                       : BROTLI_OPERATION_PROCESS;
    const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
    size_t avail_in = in.size();
    uint8_t out[kOutputPiece];
    for (;;) {
      uint8_t* next_out = out;
      size_t avail_out = sizeof out;
      if (!BrotliEncoderCompressStream(s_, op, &avail_in, &next_in, &avail_out, &next_out, nullptr))
        return false;
      size_t made = sizeof out - avail_out;
      if (made)
        sink(ctx, {reinterpret_cast<char*>(out), made});
      if (avail_in == 0 && !BrotliEncoderHasMoreOutput(s_) &&
          (op != BROTLI_OPERATION_FINISH || BrotliEncoderIsFinished(s_)))
        return true;
    }
  }

private:
  BrotliEncoderState* s_ = nullptr;
};

} // namespace

std::unique_ptr<Encoder> make_brotli(int quality, int64_t size_hint) {
  return made<BrotliEncoder>(quality, size_hint);
}

} // namespace portico::compression
