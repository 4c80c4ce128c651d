#pragma once
// The allocator of compressor state: the bytes count towards the thread's buffer memory (the
// BlockPool's in-use blocks, the thread's total rounded up), so that portico_buffer_bytes and
// max_buffer_memory see them, and come from malloc (zlib's, brotli's and zstd's hooks).
#include <cstddef>

namespace portico::compression {

void* state_alloc(size_t bytes);
void state_free(void* p);

} // namespace portico::compression
