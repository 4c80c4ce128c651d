#pragma once
// A counter with one writer (its worker thread) and readers elsewhere (the admin thread at
// scrape time): a relaxed load and store, so counting costs no locked instruction.
#include <atomic>
#include <cstdint>

namespace portico::core {

class Counter {
public:
  void inc(uint64_t by = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  uint64_t get() const { return v_.load(std::memory_order_relaxed); }

private:
  std::atomic<uint64_t> v_{0};
};

// A level (bytes held, requests waiting) with one writer, moved up and down by it.
class Level {
public:
  void add(int64_t by) {
    v_.store(v_.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  int64_t get() const { return v_.load(std::memory_order_relaxed); }

private:
  std::atomic<int64_t> v_{0};
};

} // namespace portico::core
