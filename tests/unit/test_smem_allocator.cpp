// SharedMemoryAllocator (compiler/lowering): temporaries given back merge with
// their free neighbours, so that one large buffer split by later small ones
// serves the next large one again (a finished staged dot loop's rings, then
// the next loop's); fitsTemp counts free blocks as well as the end; a kept
// tile (a loop's staged Q) is forgotten when any of its bytes is handed out.
#include "lowering/SharedMemoryAllocator.h"

#include <catch2/catch.hpp>

#include <memory>

using tessera::lowering::detail::SharedMemoryAllocator;

TEST_CASE("shared memory allocator: released temporaries merge", "[lowering][smem]") {
  SharedMemoryAllocator a(100000);
  int64_t big = a.allocateTemp(64000, 1024);
  CHECK(big == 0);
  a.releaseTemp(big, 64000);
  // Two small ones split the free block, and are given back in either order.
  int64_t s1 = a.allocateTemp(16000, 16), s2 = a.allocateTemp(16000, 16);
  CHECK(s1 == 0);
  CHECK(s2 == 16000);
  a.releaseTemp(s2, 16000);
  a.releaseTemp(s1, 16000);
  // The whole block again: no new bytes at the end.
  CHECK(a.fitsTemp(64000, 1024));
  int64_t big2 = a.allocateTemp(64000, 1024);
  CHECK(big2 == 0);
  CHECK(a.used() == 64000);
  a.releaseTemp(big2, 64000);
}

TEST_CASE("shared memory allocator: fitsTemp counts free blocks and the end", "[lowering][smem]") {
  SharedMemoryAllocator a(100000);
  int64_t t = a.allocateTemp(60000, 1024);
  a.allocate(30000); // permanent, after the temporary
  CHECK(!a.fitsTemp(60000, 1024)); // neither the end nor a free block
  a.releaseTemp(t, 60000);
  CHECK(a.fitsTemp(60000, 1024)); // the freed block
  CHECK(!a.fitsTemp(70000, 1024)); // 100000 - 90000 at the end, 60000 free
  CHECK(a.fitsTemp(9000, 16));
}

TEST_CASE("shared memory allocator: a free block at the end grows", "[lowering][smem]") {
  // A causal attention backward: the diagonal's loop, then the larger main loop.
  SharedMemoryAllocator a(100000);
  a.allocate(4096); // permanent, before both
  int64_t small = a.allocateTemp(40000, 1024);
  CHECK(small == 4096);
  a.releaseTemp(small, 40000);
  CHECK(a.fitsTemp(90000, 1024));   // 4096 + 90000 <= 100000
  CHECK(!a.fitsTemp(97000, 1024));  // past the limit
  int64_t large = a.allocateTemp(90000, 1024);
  CHECK(large == 4096);             // the free block, grown: not 44096
  CHECK(a.used() == 4096 + 90000);
  a.releaseTemp(large, 90000);
  // A block that does not end at the end does not grow.
  SharedMemoryAllocator b(100000);
  int64_t t = b.allocateTemp(20000, 1024);
  b.allocate(1000);
  b.releaseTemp(t, 20000);
  CHECK(b.allocateTemp(30000, 1024) == 21504); // after the permanent bytes, aligned
}

TEST_CASE("shared memory allocator: a kept tile is forgotten when its bytes are handed out",
          "[lowering][smem]") {
  // FlashAttention's forward: the first loop's buffer holds Q at [40960, 57344) when it is
  // released; the second loop finds it there if nothing took those bytes in between.
  int value = 0, block = 0, otherBlock = 0;
  using Kept = SharedMemoryAllocator::KeptTile;
  auto fresh = [&] {
    auto a = std::make_unique<SharedMemoryAllocator>(232448);
    int64_t loop = a->allocateTemp(57344, 1024);
    a->releaseTemp(loop, 57344);
    a->keep(Kept{&value, &block, 7, 40960, 16384});
    return a;
  };
  {
    auto a = fresh();
    REQUIRE(a->kept(&value, &block, 7).has_value());
    CHECK(a->kept(&value, &block, 7)->offset == 40960);
    CHECK_FALSE(a->kept(&value, &block, 8).has_value());      // another form
    CHECK_FALSE(a->kept(&value, &otherBlock, 7).has_value()); // another block
    CHECK_FALSE(a->kept(&block, &block, 7).has_value());      // another value
  }
  { // A small temporary below it (a reduction's partials): still there.
    auto a = fresh();
    int64_t t = a->allocateTemp(4096, 16);
    CHECK(t == 0);
    CHECK(a->kept(&value, &block, 7).has_value());
  }
  { // A temporary that reaches into it: forgotten.
    auto a = fresh();
    a->allocateTemp(45000, 16);
    CHECK_FALSE(a->kept(&value, &block, 7).has_value());
  }
  { // New bytes at the end never overlap it.
    auto a = fresh();
    a->allocate(1024);
    CHECK(a->kept(&value, &block, 7).has_value());
  }
  { // Scratch handed out over it, taken or transient: forgotten.
    auto a = fresh();
    a->setScratch(32768, 24576);
    CHECK(a->takeScratch(4096, 16) == 32768);
    CHECK(a->kept(&value, &block, 7).has_value());
    CHECK(a->transientScratch(8192, 16) == 36864);
    CHECK_FALSE(a->kept(&value, &block, 7).has_value());
  }
}
