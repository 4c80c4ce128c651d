#include "compression/encoder.h"

#include "core/small_allocator.h"

namespace portico::compression {

void* Encoder::operator new(size_t n) {
  return core::SmallAllocator::local().allocate(n);
}

void Encoder::operator delete(void* p) {
  core::SmallAllocator::local().deallocate(p);
}

int window_bits_for(int64_t size_hint, int low, int high) {
  if (size_hint < 0)
    return high;
  int bits = low;
  while (bits < high && (int64_t{1} << bits) < size_hint)
    ++bits;
  return bits;
}

std::unique_ptr<Encoder> Encoder::make(Encoding e, int level, int64_t size_hint) {
  switch (e) {
  case Encoding::GZIP: return make_gzip(level, size_hint);
  case Encoding::BROTLI: return make_brotli(level, size_hint);
  case Encoding::ZSTD: return make_zstd(level, size_hint);
  case Encoding::COUNT: break;
  }
  return nullptr;
}

} // namespace portico::compression
