// ByteQueue: a FIFO over pooled blocks. Every test checks the bytes that come out against the
// bytes that went in, across block boundaries.
#include "core/byte_queue.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <sys/socket.h>
#include <unistd.h>

namespace portico::core {
namespace {

std::string pattern(size_t n, unsigned seed = 1) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (auto& c : s) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return s;
}

std::string contents(const ByteQueue& q) {
  std::string s(q.size(), '\0');
  EXPECT_EQ(q.peek(s.data(), s.size()), s.size());
  return s;
}

TEST(ByteQueue, AppendsAcrossBlocks) {
  ByteQueue q;
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.front().empty());
  std::string in = pattern(3 * kBlockSize + 17);
  // Uneven pieces, so that appends straddle block ends.
  for (size_t i = 0; i < in.size(); i += 1000)
    q.append(std::string_view(in).substr(i, 1000));
  EXPECT_EQ(q.size(), in.size());
  EXPECT_EQ(contents(q), in);
  EXPECT_EQ(q.front().size(), kBlockSize);
  iovec iov[8];
  ASSERT_EQ(q.fill_iovec(iov, 8), 4);
  size_t total = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(std::string_view(static_cast<char*>(iov[i].iov_base), iov[i].iov_len),
              std::string_view(in).substr(total, iov[i].iov_len));
    total += iov[i].iov_len;
  }
  EXPECT_EQ(total, in.size());
  EXPECT_EQ(iov[3].iov_len, 17u);
  // At most max iovecs.
  EXPECT_EQ(q.fill_iovec(iov, 2), 2);
}

TEST(ByteQueue, ForEachRunVisitsEveryByteWithoutDraining) {
  // More blocks than one writev gathers: the replay buffer of a queued request is this long.
  ByteQueue q;
  std::string in = pattern(100 * kBlockSize + 7);
  for (size_t at = 0; at < in.size(); at += 1000)
    q.append(std::string_view(in).substr(at, 1000));
  std::string out;
  size_t runs = 0;
  q.for_each_run([&](std::string_view run) {
    out.append(run);
    ++runs;
  });
  EXPECT_EQ(out, in);
  EXPECT_GT(runs, 64u);
  EXPECT_EQ(q.size(), in.size());
}

TEST(ByteQueue, WriteSpaceAndCommit) {
  ByteQueue q;
  q.append("ab");
  auto space = q.write_space();
  ASSERT_GE(space.size(), 3u);
  std::memcpy(space.data(), "cde", 3);
  q.commit(3);
  EXPECT_EQ(contents(q), "abcde");
}

TEST(ByteQueue, DrainsAcrossBlocksAndReturnsThemToThePool) {
  ByteQueue q;
  std::string in = pattern(2 * kBlockSize + 100);
  q.append(in);
  size_t free_before = BlockPool::local().free_count();
  q.drain(kBlockSize + 5);
  EXPECT_EQ(q.size(), in.size() - kBlockSize - 5);
  EXPECT_EQ(contents(q), in.substr(kBlockSize + 5));
  EXPECT_EQ(BlockPool::local().free_count(), free_before + 1);
  EXPECT_EQ(q.front(), std::string_view(in).substr(kBlockSize + 5, kBlockSize - 5));

  // Draining more than there is empties the queue; it is usable afterwards.
  q.drain(10 * kBlockSize);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.peek(nullptr, 0), 0u);
  q.append("again");
  EXPECT_EQ(contents(q), "again");
  q.clear();
  EXPECT_TRUE(q.empty());
}

TEST(ByteQueue, DrainExactlyToABlockEnd) {
  ByteQueue q;
  std::string in = pattern(kBlockSize + 1);
  q.append(in);
  q.drain(kBlockSize);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.front(), in.substr(kBlockSize));
  iovec iov[4];
  EXPECT_EQ(q.fill_iovec(iov, 4), 1);
}

TEST(ByteQueue, MoveFromRelinksWholeBlocks) {
  ByteQueue src, dst;
  std::string in = pattern(3 * kBlockSize + 50);
  src.append(in);
  dst.append("head:");
  const char* first_block = src.front().data();

  dst.move_from(src, 2 * kBlockSize + 10);
  EXPECT_EQ(src.size(), in.size() - 2 * kBlockSize - 10);
  EXPECT_EQ(dst.size(), 5 + 2 * kBlockSize + 10);
  EXPECT_EQ(contents(dst), "head:" + in.substr(0, 2 * kBlockSize + 10));
  EXPECT_EQ(contents(src), in.substr(2 * kBlockSize + 10));
  // The first full block changed owner without a copy.
  iovec iov[4];
  ASSERT_GE(dst.fill_iovec(iov, 4), 2);
  EXPECT_EQ(iov[1].iov_base, first_block);

  // Appending after a relinked block keeps the order.
  dst.append("tail");
  EXPECT_EQ(contents(dst), "head:" + in.substr(0, 2 * kBlockSize + 10) + "tail");

  // Asking for more than there is moves what there is; the tail block is copied, not stolen.
  dst.move_from(src, 100 * kBlockSize);
  EXPECT_TRUE(src.empty());
  EXPECT_EQ(contents(dst),
            "head:" + in.substr(0, 2 * kBlockSize + 10) + "tail" + in.substr(2 * kBlockSize + 10));
  src.append("src still works");
  EXPECT_EQ(contents(src), "src still works");
}

TEST(ByteQueue, MoveFromIntoAnEmptyQueue) {
  ByteQueue src, dst;
  std::string in = pattern(kBlockSize + 3);
  src.append(in);
  src.drain(7); // the head block is partly read
  dst.move_from(src, in.size());
  EXPECT_EQ(contents(dst), in.substr(7));
  EXPECT_TRUE(src.empty());
}

class ByteQueueWriteTo : public ::testing::Test {
protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN); // as the servers do
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
    int small = 4096;
    ::setsockopt(fds_[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  }
  void TearDown() override {
    for (int fd : fds_)
      if (fd >= 0)
        ::close(fd);
  }
  std::string read_available() {
    std::string out;
    char buf[65536];
    for (ssize_t n; (n = ::read(fds_[1], buf, sizeof buf)) > 0;)
      out.append(buf, static_cast<size_t>(n));
    return out;
  }
  int fds_[2] = {-1, -1};
};

TEST_F(ByteQueueWriteTo, SendsEverythingInOrder) {
  ByteQueue q;
  std::string in = pattern(8 * kBlockSize + 123, 7);
  q.append(in);
  std::string out;
  ssize_t first = q.write_to(fds_[0]);
  // The queue is far bigger than the socket buffer: a partial write, and the rest waits.
  ASSERT_GT(first, 0);
  ASSERT_LT(static_cast<size_t>(first), in.size());
  EXPECT_EQ(q.size(), in.size() - static_cast<size_t>(first));
  errno = 0;
  EXPECT_EQ(q.write_to(fds_[0]), -1);
  EXPECT_EQ(errno, EAGAIN);
  while (!q.empty()) {
    out += read_available();
    ssize_t w = q.write_to(fds_[0]);
    ASSERT_TRUE(w > 0 || (w == -1 && errno == EAGAIN)) << "errno " << errno;
  }
  out += read_available();
  EXPECT_EQ(out, in);
}

TEST_F(ByteQueueWriteTo, FailsOnAClosedPeer) {
  ::close(fds_[1]);
  fds_[1] = -1;
  ByteQueue q;
  q.append("lost");
  errno = 0;
  EXPECT_EQ(q.write_to(fds_[0]), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_EQ(q.size(), 4u);
}

} // namespace
} // namespace portico::core

namespace portico::core {
namespace {

// An empty string_view has a null data(): appending it is a no-op, not memcpy(…, nullptr, 0)
// (UBSan caught that once through an HTTP/1.0 request without Host).
TEST(ByteQueue, AppendingNothingIsANoOp) {
  ByteQueue q;
  q.append(std::string_view());
  EXPECT_TRUE(q.empty());
  q.append("x");
  q.append(std::string_view());
  q.append(nullptr, 0);
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.front(), "x");
}

} // namespace
} // namespace portico::core
