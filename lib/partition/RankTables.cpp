//===- RankTables.cpp - values that depend on the rank --------------------===//

#include "RankTables.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace soap::partition {

Value valueOfRank(OpBuilder &b, Location loc, Value rank,
                  ArrayRef<int64_t> values) {
  if (llvm::all_equal(values))
    return arith::ConstantIndexOp::create(b, loc, values.front());
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  Value table = arith::ConstantOp::create(
      b, loc, DenseIntElementsAttr::get(type, values));
  Value entry = tensor::ExtractOp::create(b, loc, table, ValueRange{rank});
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), entry);
}

Value flagOfRank(OpBuilder &b, Location loc, Value rank,
                 ArrayRef<bool> flags) {
  SmallVector<int64_t> values(flags.begin(), flags.end());
  Value flag = valueOfRank(b, loc, rank, values);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag,
                               arith::ConstantIndexOp::create(b, loc, 0));
}

} // namespace soap::partition
