// Each coding's stream decodes to what went in, however the input is cut and flushed; a sync
// flush makes everything so far decodable at once; the state counts as buffer memory while it
// lives and not after.
#include "compression/encoder.h"
#include "core/block_pool.h"

#include <brotli/decode.h>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <zlib.h>
#include <zstd.h>

namespace portico::compression {
namespace {

std::string gunzip(const std::string& in) {
  z_stream z{};
  inflateInit2(&z, 15 + 16);
  std::string out(in.size() * 20 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

std::string unbrotli(const std::string& in) {
  auto* s = BrotliDecoderCreateInstance(nullptr, nullptr, nullptr);
  std::string out(in.size() * 20 + 1024, '\0');
  const uint8_t* next_in = reinterpret_cast<const uint8_t*>(in.data());
  size_t avail_in = in.size(), avail_out = out.size();
  uint8_t* next_out = reinterpret_cast<uint8_t*>(out.data());
  BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, nullptr);
  out.resize(out.size() - avail_out);
  BrotliDecoderDestroyInstance(s);
  return out;
}

std::string unzstd(const std::string& in) {
  auto* d = ZSTD_createDStream();
  std::string out(in.size() * 20 + 1024, '\0');
  ZSTD_inBuffer i{in.data(), in.size(), 0};
  ZSTD_outBuffer o{out.data(), out.size(), 0};
  while (i.pos < i.size && !ZSTD_isError(ZSTD_decompressStream(d, &o, &i)))
    ;
  out.resize(o.pos);
  ZSTD_freeDStream(d);
  return out;
}

std::string decode(Encoding e, const std::string& in) {
  return e == Encoding::GZIP ? gunzip(in) : e == Encoding::BROTLI ? unbrotli(in) : unzstd(in);
}

void append(void* ctx, std::string_view out) {
  static_cast<std::string*>(ctx)->append(out);
}

std::string text(size_t n) {
  std::mt19937 rng(7);
  std::string s;
  const char* words[] = {"alpha ", "beta ", "gamma ", "{\"id\": ", "42, ", "\"name\": ", "\n"};
  while (s.size() < n)
    s += words[rng() % 7];
  s.resize(n);
  return s;
}

class EncoderTest : public ::testing::TestWithParam<Encoding> {};

TEST_P(EncoderTest, DecodesToTheInputWhateverTheCuts) {
  std::string in = text(300000), out;
  auto e = Encoder::make(GetParam(), GetParam() == Encoding::GZIP ? 6 : 4, -1);
  ASSERT_TRUE(e);
  for (size_t at = 0, cut = 1; at < in.size(); at += cut, cut = cut * 3 + 7)
    ASSERT_TRUE(
        e->encode(std::string_view(in).substr(at, cut), Encoder::Flush::NONE, append, &out));
  ASSERT_TRUE(e->encode({}, Encoder::Flush::FINISH, append, &out));
  EXPECT_LT(out.size(), in.size() / 3);
  EXPECT_EQ(decode(GetParam(), out), in);
}

TEST_P(EncoderTest, ASyncFlushMakesWhatCameSoFarDecodable) {
  auto e = Encoder::make(GetParam(), 3, -1);
  std::string out;
  ASSERT_TRUE(e->encode("data: one\n\n", Encoder::Flush::NONE, append, &out));
  ASSERT_TRUE(e->encode({}, Encoder::Flush::SYNC, append, &out));
  EXPECT_EQ(decode(GetParam(), out), "data: one\n\n");
  ASSERT_TRUE(e->encode("data: two\n\n", Encoder::Flush::SYNC, append, &out));
  EXPECT_EQ(decode(GetParam(), out), "data: one\n\ndata: two\n\n");
  ASSERT_TRUE(e->encode({}, Encoder::Flush::FINISH, append, &out));
  EXPECT_EQ(decode(GetParam(), out), "data: one\n\ndata: two\n\n");
}

TEST_P(EncoderTest, AnEmptyBodyIsAValidStream) {
  auto e = Encoder::make(GetParam(), 1, 0);
  std::string out;
  ASSERT_TRUE(e->encode({}, Encoder::Flush::FINISH, append, &out));
  EXPECT_FALSE(out.empty());
  EXPECT_EQ(decode(GetParam(), out), "");
}

TEST_P(EncoderTest, ItsStateIsBufferMemoryWhileItLives) {
  int64_t before = core::BlockPool::local().in_use();
  int level = GetParam() == Encoding::GZIP ? 6 : GetParam() == Encoding::BROTLI ? 4 : 3;
  auto e = Encoder::make(GetParam(), level, -1); // the defaults
  std::string out;
  ASSERT_TRUE(e->encode(text(100000), Encoder::Flush::NONE, append, &out));
  int64_t during = core::BlockPool::local().in_use() - before;
  EXPECT_GT(during, 0);
  // Bounded windows: at most 2 MiB at the default levels (brotli's own default window alone
  // would be 4 MiB, zstd's 2 MiB).
  EXPECT_LE(during * static_cast<int64_t>(sizeof(core::Block)), 2 << 20)
      << during * sizeof(core::Block) / 1024 << " KiB";
  std::printf("%s: %lld KiB\n", std::string(token(GetParam())).c_str(),
              static_cast<long long>(during * sizeof(core::Block) / 1024));
  e.reset();
  EXPECT_EQ(core::BlockPool::local().in_use(), before);
}

TEST_P(EncoderTest, AKnownSmallLengthTakesASmallCoder) {
  int level = GetParam() == Encoding::GZIP ? 6 : GetParam() == Encoding::BROTLI ? 4 : 3;
  std::string in = text(2000), out;
  int64_t before = core::BlockPool::local().in_use();
  auto small = Encoder::make(GetParam(), level, static_cast<int64_t>(in.size()));
  int64_t small_blocks = core::BlockPool::local().in_use() - before;
  ASSERT_TRUE(small->encode(in, Encoder::Flush::FINISH, append, &out));
  EXPECT_EQ(decode(GetParam(), out), in);
  small.reset();
  auto large = Encoder::make(GetParam(), level, -1);
  std::string out2;
  ASSERT_TRUE(large->encode(in, Encoder::Flush::FINISH, append, &out2));
  int64_t large_blocks = core::BlockPool::local().in_use() - before;
  EXPECT_LT(small_blocks, large_blocks);
  if (GetParam() == Encoding::GZIP)
    EXPECT_EQ(out, out2); // a window that holds the whole body changes no byte
}

INSTANTIATE_TEST_SUITE_P(Codings, EncoderTest,
                         ::testing::Values(Encoding::GZIP, Encoding::BROTLI, Encoding::ZSTD),
                         [](const auto& info) { return std::string(token(info.param)); });

} // namespace
} // namespace portico::compression
