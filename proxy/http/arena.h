#pragma once
// Bump allocator for one exchange's header bytes: pooled blocks, released together by reset().
// Views handed out stay valid until reset(); nothing is ever moved.
#include "core/block_pool.h"

#include <string_view>
#include <vector>

namespace portico::http {

class Arena {
public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() { release(); }

  char* allocate(size_t n);
  std::string_view copy(std::string_view s);
  // Returns last + more as one view. Grows in place when last is the newest allocation and
  // there is room; otherwise copies both once, to where they can grow (a fresh block, or for a
  // large value twice its size), so that a value arriving a byte at a time costs linear time
  // and memory, not quadratic.
  std::string_view append(std::string_view last, std::string_view more);
  // Forgets everything but keeps one block for the next exchange.
  void reset();
  void release();

private:
  struct Large {
    char* data;
    size_t used;
    size_t capacity;
  };
  char* allocate_large(size_t n, size_t capacity);

  core::Block* head_ = nullptr; // newest block first
  std::vector<Large> large_;    // allocations bigger than half a block, newest last
};

} // namespace portico::http
