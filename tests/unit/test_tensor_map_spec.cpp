// TensorMapSpec: the text the compiler attaches to kernels with TMA loads and
// the kernel cache stores; the runtime parses it at load time.
#include "tessera/TensorMapSpec.h"

#include <catch2/catch.hpp>

using namespace tessera;

TEST_CASE("tensor map specs round-trip through their text", "[tma]") {
  TensorMapSpec m;
  m.pointerArg = 1;
  m.elementBytes = 4;
  m.dataType = 7;
  m.cols.c = -3;
  m.cols.terms = {{4, 1}, {7, -2}};
  m.rows.terms = {{3, 1}};
  m.rowStride.c = 16;
  m.boxCols = 32;
  m.boxRows = 256;
  m.swizzleBytes = 128;
  std::string text = formatTensorMapSpec(m);
  CHECK(text == "ptr=1 type=7 eb=4 box=32x256 swizzle=128 cols=-3+1*a4+-2*a7 rows=0+1*a3 stride=16");
  std::optional<TensorMapSpec> p = parseTensorMapSpec(text);
  REQUIRE(p);
  CHECK(p->pointerArg == 1);
  CHECK(p->elementBytes == 4);
  CHECK(p->dataType == 7);
  CHECK(p->cols.c == -3);
  CHECK(p->cols.terms == m.cols.terms);
  CHECK(p->rows.terms == m.rows.terms);
  CHECK(p->rowStride.c == 16);
  CHECK(p->rowStride.terms.empty());
  CHECK(p->boxCols == 32);
  CHECK(p->boxRows == 256);
  CHECK(p->swizzleBytes == 128);
  CHECK(formatTensorMapSpec(*p) == text);
}

TEST_CASE("malformed tensor map specs are rejected", "[tma]") {
  const std::string good = "ptr=0 type=9 eb=2 box=64x128 swizzle=128 cols=0+1*a5 rows=0+1*a3 stride=0+1*a6";
  REQUIRE(parseTensorMapSpec(good));
  for (const std::string bad : {
           std::string(""),
           good.substr(0, good.size() - 12),                     // a field missing
           good + " extra=1",                                    // an unknown field
           "ptr=-1" + good.substr(5),                            // negative argument
           "ptr=0 type=9 eb=3" + good.substr(17),                // element size
           "ptr=0 type=9 eb=2 box=512x128" + good.substr(29),    // box over 256
           "ptr=0 type=9 eb=2 box=64x0" + good.substr(29),       // empty box
           good.substr(0, good.size() - 3) + "*b6",              // not an argument
           good.substr(0, good.size() - 1) + "x",                // trailing junk
           "ptr=zero" + good.substr(5),
       })
    CHECK_FALSE(parseTensorMapSpec(bad));
}

TEST_CASE("tensor map specs with outer dimensions round-trip", "[tma]") {
  TensorMapSpec m;
  m.dataType = 6;
  m.cols.c = 128;
  m.rows.terms = {{11, 1}};
  m.rowStride.terms = {{8, 1}};
  m.boxCols = 64;
  m.boxRows = 128;
  m.swizzleBytes = 128;
  m.outer = {{TensorMapSpec::Form{0, {{10, 1}}}, TensorMapSpec::Form{0, {{7, 1}}}},
             {TensorMapSpec::Form{2147483647, {}}, TensorMapSpec::Form{0, {{6, 2}}}}};
  m.nonNegativeArgs = {10, 3};
  std::string text = formatTensorMapSpec(m);
  CHECK(text == "ptr=0 type=6 eb=2 box=64x128 swizzle=128 cols=128 rows=0+1*a11 stride=0+1*a8 "
                "outer=0+1*a10:0+1*a7;2147483647:0+2*a6 nonneg=a10,a3");
  std::optional<TensorMapSpec> p = parseTensorMapSpec(text);
  REQUIRE(p);
  REQUIRE(p->outer.size() == 2);
  CHECK(p->outer[0].extent.terms == m.outer[0].extent.terms);
  CHECK(p->outer[1].extent.c == 2147483647);
  CHECK(p->outer[1].stride.terms == m.outer[1].stride.terms);
  CHECK(p->nonNegativeArgs == m.nonNegativeArgs);
  CHECK(formatTensorMapSpec(*p) == text);
  // Malformed outer dimensions (no colon, a bad form, four of them, twice) and
  // argument lists (not an argument, a trailing comma, negative).
  const std::string head = text.substr(0, text.find(" outer="));
  for (const std::string bad : {head + " outer=", head + " outer=0+1*a10",
                                head + " outer=0+1*a10:x", head + " outer=1:16;1:16;1:16;1:16",
                                text + " outer=1:16", head + " nonneg=10",
                                head + " nonneg=a10,", head + " nonneg=a-1"})
    CHECK_FALSE(parseTensorMapSpec(bad));
  CHECK(parseTensorMapSpec(head + " outer=1:16;1:16;1:16"));
}
