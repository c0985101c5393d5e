// The on-chip byte allocator: first fit, alignment, coalescing, and the PSUM bank rule.
#include "kernel/allocator.h"

#include <gtest/gtest.h>

#include <memory>

namespace trnsim::kernel {
namespace {

TEST(ByteAllocator, FirstFitAlignedAndCoalesced) {
  ByteAllocator a("sbuf", 1024, 64);
  EXPECT_EQ(a.allocate(100, "x"), 0);
  EXPECT_EQ(a.allocate(10, "y"), 128);  // aligned up from 100
  EXPECT_EQ(a.allocate(64, "z"), 192);
  a.release(128);
  EXPECT_EQ(a.allocate(64, "w"), 128);  // the hole is reused
  a.release(0);
  a.release(128);
  a.release(192);
  EXPECT_EQ(a.free_bytes(), 1024);
  EXPECT_EQ(a.largest_free(), 1024);  // coalesced back into one range
  EXPECT_EQ(a.allocate(1025, "big"), std::nullopt);
  EXPECT_EQ(a.live(), "none");
}

TEST(ByteAllocator, PsumTilesDoNotStraddleBanks) {
  ByteAllocator a("psum", 8 * 2048, 8, 2048);
  EXPECT_EQ(a.allocate(1536, "a"), 0);
  EXPECT_EQ(a.allocate(1024, "b"), 2048);  // would cross into bank 1 at 1536: next bank
  EXPECT_EQ(a.allocate(512, "c"), 1536);   // fits the rest of bank 0
  EXPECT_EQ(a.allocate(4096, "d"), 4096);  // two banks, from a bank boundary
  EXPECT_EQ(a.live(), "'a' [0, 1536), 'b' [2048, 3072), 'c' [1536, 2048), 'd' [4096, 8192)");
}

TEST(ByteAllocator, NextFitIsARingAndBestFitLeavesLeast) {
  using Fit = ByteAllocator::Fit;
  ByteAllocator a("sbuf", 1024, 64);
  EXPECT_EQ(a.allocate(256, "x0", Fit::kNext), 0);
  a.release(0);
  // Freed bytes are taken again only after the rest of the ring.
  EXPECT_EQ(a.allocate(256, "x1", Fit::kNext), 256);
  a.release(256);
  EXPECT_EQ(a.allocate(256, "x2", Fit::kNext), 512);
  EXPECT_EQ(a.allocate(256, "x3", Fit::kNext), 768);
  EXPECT_EQ(a.allocate(256, "x4", Fit::kNext), 0);  // wrapped around
  EXPECT_EQ(a.allocate(512, "x5", Fit::kNext), std::nullopt);
  ByteAllocator b("sbuf", 1024, 64);
  EXPECT_EQ(b.allocate(128, "a"), 0);
  EXPECT_EQ(b.allocate(512, "b"), 128);
  EXPECT_EQ(b.allocate(128, "c"), 640);
  b.release(0);    // a hole of 128
  b.release(640);  // and 128 + the tail: 384
  EXPECT_EQ(b.allocate(128, "d", Fit::kBest), 0);
}

// Where memory is tight the ring wraps onto bytes just given back (a store's DMA may still be
// reading them); kOldest takes bytes given back longer ago when some fit, at either end of a
// free range, and is the ring wherever the ring's choice is as old as anything that fits.
TEST(ByteAllocator, OldestFitTakesTheBytesFreedLongestAgo) {
  using Fit = ByteAllocator::Fit;
  const auto full = [] {
    auto a = std::make_unique<ByteAllocator>("sbuf", 1024, 64);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(a->allocate(256, "t", Fit::kNext), 256 * i);
    return a;
  };
  // [768, 1024) freed first, [256, 512) last: the ring (from 0, wrapped) takes the latter.
  auto ring = full(), oldest = full();
  for (ByteAllocator* a : {ring.get(), oldest.get()}) {
    a->release(768);
    a->release(256);
  }
  EXPECT_EQ(ring->allocate(256, "x", Fit::kNext), 256);
  EXPECT_EQ(oldest->allocate(256, "x", Fit::kOldest), 768);
  // One free range [512, 1024): its low half given back after its high half.
  auto halves = full();
  halves->release(768);
  halves->release(512);
  EXPECT_EQ(halves->allocate(256, "x", Fit::kOldest), 768);
  EXPECT_EQ(halves->allocate(256, "y", Fit::kOldest), 512);  // all that is left
  // Never-used bytes count as oldest of all; with nothing given back it is the ring.
  ByteAllocator fresh("sbuf", 1024, 64);
  EXPECT_EQ(fresh.allocate(256, "a", Fit::kOldest), 0);
  fresh.release(0);
  EXPECT_EQ(fresh.allocate(256, "b", Fit::kOldest), 256);
  EXPECT_EQ(fresh.allocate(512, "c", Fit::kOldest), 512);
  EXPECT_EQ(fresh.allocate(256, "d", Fit::kOldest), 0);
  EXPECT_EQ(fresh.allocate(64, "e", Fit::kOldest), std::nullopt);
}

}  // namespace
}  // namespace trnsim::kernel
