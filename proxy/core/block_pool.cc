#include "core/block_pool.h"

namespace portico::core {

BlockPool& BlockPool::local() {
  thread_local BlockPool pool;
  return pool;
}

Block* BlockPool::get() {
  Block* b = free_;
  if (b) {
    free_ = b->next;
    --free_count_;
    if (free_count_ < idle_)
      idle_ = free_count_;
  } else {
    b = new Block;
    ++allocations_;
  }
  b->next = nullptr;
  b->begin = b->end = 0;
  count(1);
  return b;
}

void BlockPool::put(Block* b) {
  count(-1);
  b->next = free_;
  free_ = b;
  ++free_count_;
}

size_t BlockPool::trim() {
  size_t spare = free_count_ > kWarmFloor ? free_count_ - kWarmFloor : 0;
  size_t n = idle_ < spare ? idle_ : spare;
  if (n == 0) {
    idle_ = free_count_;
    return 0;
  }
  // The list is most recently returned first: keep its warm head, free its cold tail.
  size_t keep = free_count_ - n;
  Block** tail = &free_;
  for (size_t i = 0; i < keep; ++i)
    tail = &(*tail)->next;
  for (Block* b = *tail; b;) {
    Block* next = b->next;
    delete b;
    b = next;
  }
  *tail = nullptr;
  free_count_ = keep;
  idle_ = free_count_;
  return n;
}

BlockPool::~BlockPool() {
  while (free_) {
    Block* n = free_->next;
    delete free_;
    free_ = n;
  }
}

} // namespace portico::core
