#include "compression/state_memory.h"

#include "core/block_pool.h"

#include <cstdlib>
#include <new>

namespace portico::compression {

namespace {
// Before each allocation: its size, to take back on free (the hooks free by address).
struct alignas(std::max_align_t) Prefix {
  size_t bytes;
};

// This thread's compressor bytes; the pool is charged their count in blocks, rounded up once
// for all of them rather than per allocation (a coder makes dozens of small ones).
thread_local int64_t state_bytes = 0;

int64_t blocks_for(int64_t bytes) {
  constexpr auto B = static_cast<int64_t>(sizeof(core::Block));
  return (bytes + B - 1) / B;
}

void account(int64_t by) {
  int64_t before = blocks_for(state_bytes);
  state_bytes += by;
  core::BlockPool::local().charge(blocks_for(state_bytes) - before);
}
} // namespace

void* state_alloc(size_t bytes) {
  void* raw = std::malloc(sizeof(Prefix) + bytes);
  if (!raw)
    return nullptr;
  auto* p = static_cast<Prefix*>(raw);
  p->bytes = bytes;
  account(static_cast<int64_t>(bytes));
  return p + 1;
}

void state_free(void* ptr) {
  if (!ptr)
    return;
  auto* p = static_cast<Prefix*>(ptr) - 1;
  account(-static_cast<int64_t>(p->bytes));
  std::free(p);
}

} // namespace portico::compression
