#pragma once
// Fixed-size memory blocks recycled through a per-thread free list, so that buffers on the
// request path cost no malloc once a worker has warmed up.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace portico::core {

inline constexpr size_t kBlockSize = 16384 - 32;

struct Block {
  Block* next = nullptr;
  uint32_t begin = 0; // first unread byte
  uint32_t end = 0;   // one past the last written byte
  char data[kBlockSize];

  size_t readable() const { return end - begin; }
  size_t writable() const { return kBlockSize - end; }
};

class BlockPool {
public:
  // The calling thread's pool. Blocks must be returned on the thread that took them.
  static BlockPool& local();

  Block* get();
  void put(Block* b);
  size_t free_count() const { return free_count_; }
  // Blocks handed out and not yet returned: the thread's buffered bytes, in blocks.
  int64_t in_use() const { return in_use_; }
  // Where to publish in_use() for other threads to read (a worker's stats), or null.
  void publish_to(std::atomic<int64_t>* gauge) { gauge_ = gauge; }

  ~BlockPool();

private:
  // 16 MiB per thread kept warm at most: enough for steady load, and a burst's peak is
  // handed back to the allocator rather than held for ever.
  static constexpr size_t kMaxFree = 1024;
  void count(int64_t by) {
    in_use_ += by;
    if (gauge_)
      gauge_->store(in_use_, std::memory_order_relaxed);
  }
  Block* free_ = nullptr;
  size_t free_count_ = 0;
  int64_t in_use_ = 0;
  std::atomic<int64_t>* gauge_ = nullptr;
};

} // namespace portico::core
