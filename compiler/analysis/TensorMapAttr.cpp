#include "analysis/TensorMapAttr.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace tessera::analysis {
namespace {

DenseI64ArrayAttr formAttr(Builder &b, const TensorMapSpec::Form &f) {
  SmallVector<int64_t> v{f.c};
  for (auto [arg, coef] : f.terms) {
    v.push_back(arg);
    v.push_back(coef);
  }
  return b.getDenseI64ArrayAttr(v);
}

std::optional<TensorMapSpec::Form> formOf(Attribute a) {
  auto arr = dyn_cast_or_null<DenseI64ArrayAttr>(a);
  if (!arr || arr.size() % 2 != 1)
    return std::nullopt;
  ArrayRef<int64_t> v = arr.asArrayRef();
  TensorMapSpec::Form f;
  f.c = v[0];
  for (size_t i = 1; i < v.size(); i += 2) {
    if (v[i] < 0)
      return std::nullopt;
    f.terms.push_back({int(v[i]), v[i + 1]});
  }
  return f;
}

} // namespace

DictionaryAttr tensorMapAttr(MLIRContext *ctx, const TensorMapSpec &s) {
  Builder b(ctx);
  NamedAttrList fields;
  fields.set("ptr", b.getI64IntegerAttr(s.pointerArg));
  fields.set("type", b.getI64IntegerAttr(s.dataType));
  fields.set("eb", b.getI64IntegerAttr(s.elementBytes));
  fields.set("box", b.getDenseI64ArrayAttr({s.boxCols, s.boxRows}));
  fields.set("swizzle", b.getI64IntegerAttr(s.swizzleBytes));
  fields.set("cols", formAttr(b, s.cols));
  fields.set("rows", formAttr(b, s.rows));
  fields.set("stride", formAttr(b, s.rowStride));
  if (!s.outer.empty()) { // extent, stride, extent, stride, ...
    SmallVector<Attribute> outer;
    for (const TensorMapSpec::Outer &o : s.outer) {
      outer.push_back(formAttr(b, o.extent));
      outer.push_back(formAttr(b, o.stride));
    }
    fields.set("outer", b.getArrayAttr(outer));
  }
  if (!s.nonNegativeArgs.empty())
    fields.set("nonneg", b.getDenseI64ArrayAttr(
                             SmallVector<int64_t>(s.nonNegativeArgs.begin(), s.nonNegativeArgs.end())));
  return fields.getDictionary(ctx);
}

std::optional<TensorMapSpec> tensorMapFromAttr(Attribute attr) {
  auto d = dyn_cast_or_null<DictionaryAttr>(attr);
  auto outer = d ? dyn_cast_or_null<ArrayAttr>(d.get("outer")) : ArrayAttr();
  auto nonneg = d ? dyn_cast_or_null<DenseI64ArrayAttr>(d.get("nonneg")) : DenseI64ArrayAttr();
  if (!d || d.size() != 8 + (outer ? 1 : 0) + (nonneg ? 1 : 0))
    return std::nullopt;
  auto num = [&](StringRef key, int &out) {
    auto i = dyn_cast_or_null<IntegerAttr>(d.get(key));
    if (i)
      out = int(i.getInt());
    return bool(i);
  };
  TensorMapSpec s;
  auto box = dyn_cast_or_null<DenseI64ArrayAttr>(d.get("box"));
  std::optional<TensorMapSpec::Form> cols = formOf(d.get("cols")), rows = formOf(d.get("rows")),
                                     stride = formOf(d.get("stride"));
  if (!num("ptr", s.pointerArg) || !num("type", s.dataType) || !num("eb", s.elementBytes) ||
      !num("swizzle", s.swizzleBytes) || !box || box.size() != 2 || !cols || !rows || !stride ||
      s.pointerArg < 0 || (s.elementBytes != 1 && s.elementBytes != 2 && s.elementBytes != 4))
    return std::nullopt;
  s.boxCols = int(box[0]);
  s.boxRows = int(box[1]);
  if (s.boxCols <= 0 || s.boxRows <= 0 || s.boxCols > 256 || s.boxRows > 256)
    return std::nullopt;
  s.cols = *cols;
  s.rows = *rows;
  s.rowStride = *stride;
  if (outer) {
    if (outer.size() % 2 || outer.size() / 2 > TensorMapSpec::kMaxOuter)
      return std::nullopt;
    for (size_t i = 0; i < outer.size(); i += 2) {
      std::optional<TensorMapSpec::Form> e = formOf(outer[i]), st = formOf(outer[i + 1]);
      if (!e || !st)
        return std::nullopt;
      s.outer.push_back({*e, *st});
    }
  }
  if (nonneg)
    for (int64_t a : nonneg.asArrayRef()) {
      if (a < 0)
        return std::nullopt;
      s.nonNegativeArgs.push_back(int(a));
    }
  return s;
}

} // namespace tessera::analysis
