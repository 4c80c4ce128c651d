#pragma once
// Bump allocator for one exchange's header bytes. The first bytes live in the arena itself
// (InlineArena<N>: N of them, kInline by default), which holds a typical request's fields
// without touching a pool (and an HTTP/2 stream parked for reuse holds no 16 KiB block for its
// 200 bytes of headers); past that, pooled blocks, and for a very large value a heap buffer.
// Views handed out stay valid until reset(); nothing is ever moved.
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
  // Room for more bytes right after held, in the inline bytes only (never a block): held is
  // empty, or the newest inline allocation. Returns where to write them, or null when there is
  // no such room; held then stays as it is.
  char* grow_inline(std::string_view held, size_t more) {
    if (head_ || inline_used_ + more > inline_capacity_)
      return nullptr;
    char* top = inline_ + inline_used_;
    if (!held.empty() && held.data() + held.size() != top)
      return nullptr;
    inline_used_ += static_cast<uint32_t>(more);
    return top;
  }
  // held (the newest inline allocation, else nothing happens) is free for the next one.
  void shrink_inline(std::string_view held) {
    if (!held.empty() && held.data() + held.size() == inline_ + inline_used_)
      inline_used_ = static_cast<uint32_t>(held.data() - inline_);
  }
  // Forgets everything: blocks go back to the pool, the inline bytes are reused.
  void reset();
  void release() { reset(); }

  static constexpr size_t kInline = 1024;

protected:
  // space: capacity bytes that live as long as the arena (the derived InlineArena's own).
  Arena(char* space, uint32_t capacity) : inline_(space), inline_capacity_(capacity) {}

private:
  struct Large {
    char* data;
    size_t used;
    size_t capacity;
  };
  char* allocate_large(size_t n, size_t capacity);

  char* const inline_;
  const uint32_t inline_capacity_;
  uint32_t inline_used_ = 0;
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
