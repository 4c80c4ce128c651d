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
  } else {
    b = new Block;
  }
  b->next = nullptr;
  b->begin = b->end = 0;
  count(1);
  return b;
}

void BlockPool::put(Block* b) {
  count(-1);
  if (free_count_ >= kMaxFree) {
    delete b;
    return;
  }
  b->next = free_;
  free_ = b;
  ++free_count_;
}

BlockPool::~BlockPool() {
  while (free_) {
    Block* n = free_->next;
    delete free_;
    free_ = n;
  }
}

} // namespace portico::core
