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
