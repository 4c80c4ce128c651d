#include "core/allocator_tuning.h"

#include <malloc.h>

namespace portico::core {

void tune_allocator() {
  // Keep up to 64 MiB of free memory at the top of each heap rather than returning it at once,
  // and grow in 4 MiB steps. Fixing the trim threshold also stops glibc's dynamic mmap
  // threshold from moving, so the 16 KiB I/O blocks always come from the heaps.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_TOP_PAD, 4 << 20);
}

} // namespace portico::core
