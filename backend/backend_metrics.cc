#include "backend_metrics.h"

#include <new>
#include <sys/mman.h>

namespace portico::backend {

const char* to_string(App a) {
  switch (a) {
  case App::HELLO: return "hello";
  case App::COUNTER: return "counter";
  case App::ECHO: return "echo";
  case App::STATUS: return "status";
  case App::DELAY: return "delay";
  case App::BYTES: return "bytes";
  case App::HEADERS: return "headers";
  case App::STATIC: return "static";
  case App::NOT_FOUND: return "not_found";
  case App::COUNT: break;
  }
  return "unknown";
}

BackendMetrics::BackendMetrics(size_t slots, std::vector<double> bounds)
    : count_(slots), bounds_(std::move(bounds)), used_(slots, false) {
  if (bounds_.size() > metrics::Histogram::kMaxBuckets)
    bounds_.resize(metrics::Histogram::kMaxBuckets);
  void* p = ::mmap(nullptr, sizeof(WorkerSlot) * slots, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    count_ = 0;
    return;
  }
  slots_ = static_cast<WorkerSlot*>(p);
  // Constructed when first handed out (acquire), so that pages of slots never used stay
  // untouched.
}

BackendMetrics::~BackendMetrics() {
  if (slots_)
    ::munmap(slots_, sizeof(WorkerSlot) * count_);
}

int BackendMetrics::acquire() {
  for (size_t i = 0; i < count_; ++i) {
    if (used_[i])
      continue;
    if (i >= ever_used_) {
      new (&slots_[i]) WorkerSlot(&bounds_);
      ever_used_ = i + 1;
    }
    used_[i] = true;
    ++in_use_;
    return static_cast<int>(i);
  }
  return -1;
}

void BackendMetrics::release(int i) {
  if (i < 0 || static_cast<size_t>(i) >= count_ || !used_[static_cast<size_t>(i)])
    return;
  used_[static_cast<size_t>(i)] = false;
  --in_use_;
  slots_[i].set_in_flight(0);
}

BackendMetrics::AppTotals BackendMetrics::totals(App a) const {
  AppTotals t;
  t.buckets.assign(bounds_.size() + 1, 0);
  for (size_t i = 0; i < ever_used_; ++i) {
    const AppStats& s = slots_[i].app(a);
    for (size_t c = 0; c < kStatusClasses; ++c)
      t.requests[c] += s.requests[c].get();
    s.duration.add_to(t.buckets, t.count, t.sum);
  }
  return t;
}

std::vector<uint64_t> BackendMetrics::requests_by_slot() const {
  std::vector<uint64_t> out(ever_used_, 0);
  for (size_t i = 0; i < ever_used_; ++i)
    for (size_t a = 0; a < kAppCount; ++a)
      for (size_t c = 0; c < kStatusClasses; ++c)
        out[i] += slots_[i].app(static_cast<App>(a)).requests[c].get();
  return out;
}

} // namespace portico::backend
