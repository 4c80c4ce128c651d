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
  // Free blocks kept through any trim: 2 MiB per thread, warm for the next burst. (What a
  // steady load cycles through is kept however large: trim() frees only what it left idle.)
  static constexpr size_t kWarmFloor = 128;

  // The calling thread's pool. Blocks must be returned on the thread that took them.
  static BlockPool& local();

  Block* get();
  void put(Block* b);
  // Gives back to the allocator the free blocks that no get reached since the last trim (the
  // fewest the free list held in between), down to kWarmFloor; returns how many. Called on a
  // timer of the owning thread's loop.
  size_t trim();
  size_t free_count() const { return free_count_; }
  // Blocks taken from the allocator so far: how often the free list could not serve.
  uint64_t allocations() const { return allocations_; }
  // Memory in use beside the blocks (a compressor's state), in blocks: counted as they are.
  void charge(int64_t blocks) { count(blocks); }
  // Blocks handed out and not yet returned: the thread's buffered bytes, in blocks.
  int64_t in_use() const { return in_use_; }
  // Where to publish in_use() for other threads to read (a worker's stats), or null.
  void publish_to(std::atomic<int64_t>* gauge) { gauge_ = gauge; }

  ~BlockPool();

private:
  // Every returned block is kept: a loop pass through thousands of busy connections takes
  // thousands of blocks before the flushes at its end give them back, and a fixed cap on the
  // free list sent that turnover through malloc on every pass. What stays idle for a whole
  // trim interval is what a burst left; trim() hands that back.
  void count(int64_t by) {
    in_use_ += by;
    if (gauge_)
      gauge_->store(in_use_, std::memory_order_relaxed);
  }
  Block* free_ = nullptr;
  size_t free_count_ = 0;
  size_t idle_ = 0; // the fewest free blocks since the last trim: none of these was needed
  uint64_t allocations_ = 0;
  int64_t in_use_ = 0;
  std::atomic<int64_t>* gauge_ = nullptr;
};

} // namespace portico::core
