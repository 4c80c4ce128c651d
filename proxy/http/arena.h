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
  // the block has room; otherwise copies both once.
  std::string_view append(std::string_view last, std::string_view more);
  // Forgets everything but keeps one block for the next exchange.
  void reset();
  void release();

private:
  core::Block* head_ = nullptr; // newest block first
  std::vector<char*> large_;    // allocations bigger than a block
};

} // namespace portico::http
