#pragma once
// Bump allocator for one exchange's header bytes. The first bytes live in the arena itself
// (InlineArena<N>: N of them, kInline by default), which hold an API client's request fields
// (curl, h2load, gRPC: under 100 bytes) without touching a pool; past them one spare chunk of
// kSpare bytes from the thread's SmallAllocator, which holds a browser's (about 550 bytes,
// without cookies); past that, pooled 16 KiB blocks, and for a very large value a heap buffer.
// An HTTP/2 stream's object is made for each concurrent stream, so its own bytes are kept few:
// with 1 KiB of them it was a tenth of a busy h2c connection's memory. Views handed out stay
// valid until reset(); nothing is ever moved.
#include "core/block_pool.h"

#include <initializer_list>
#include <string_view>
#include <vector>

namespace portico::http {

class Arena {
public:
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() { release(); }

  char* allocate(size_t n);
  std::string_view copy(std::string_view s);
  // parts, one after the other, as one view.
  std::string_view join(std::initializer_list<std::string_view> parts);
  // Returns last + more as one view. Grows in place when last is the newest allocation and
  // there is room; otherwise copies both once, to where they can grow (a fresh block, or for a
  // large value twice its size), so that a value arriving a byte at a time costs linear time
  // and memory, not quadratic.
  std::string_view append(std::string_view last, std::string_view more);
  // Room for more bytes right after held, in the inline bytes or the spare chunk, never a block:
  // held is empty (then the spare chunk is taken if the inline bytes are short and it is free),
  // or the newest such allocation. Returns where to write them, or null when there is no such
  // room; held then stays as it is.
  char* grow_inline(std::string_view held, size_t more) {
    if (head_)
      return nullptr;
    char* top = room_ + room_used_;
    if (!held.empty() && held.data() + held.size() != top)
      return nullptr;
    if (room_used_ + more > room_capacity_)
      return held.empty() ? take_spare(more) : nullptr;
    room_used_ += static_cast<uint32_t>(more);
    return top;
  }
  // held (the newest inline or spare allocation, else nothing happens) is free for the next one.
  void shrink_inline(std::string_view held) {
    if (!head_ && !held.empty() && held.data() + held.size() == room_ + room_used_)
      room_used_ = static_cast<uint32_t>(held.data() - room_);
  }
  // Forgets everything: blocks go back to the pool, the inline bytes are reused.
  void reset();
  void release() { reset(); }

  static constexpr size_t kInline = 256;
  static constexpr size_t kSpare = 1024;

protected:
  // space: capacity bytes that live as long as the arena (the derived InlineArena's own).
  Arena(char* space, uint32_t capacity)
      : inline_(space), inline_capacity_(capacity), room_(space), room_capacity_(capacity) {}

private:
  struct Large {
    char* data;
    size_t used;
    size_t capacity;
  };
  char* allocate_large(size_t n, size_t capacity);
  // The spare chunk with its first n bytes taken, or null if it is taken already or too small.
  char* take_spare(size_t n);

  char* const inline_;
  const uint32_t inline_capacity_;
  // Where small allocations go while no block is in use: the inline bytes, then the spare.
  // room_ is the spare chunk (a SmallAllocator one of kSpare bytes) once it is taken.
  char* room_;
  uint32_t room_capacity_;
  uint32_t room_used_ = 0;
  core::Block* head_ = nullptr; // newest block first; none while the inline bytes suffice
  std::vector<Large> large_;    // allocations bigger than half a block, newest last
};

template <size_t N = Arena::kInline> class InlineArena final : public Arena {
public:
  InlineArena() : Arena(space_, N) {}

private:
  char space_[N];
};

} // namespace portico::http
