// Whether the rows of a 2-D pointer tile all start at the same address modulo
// a power of two, whatever that address is: the fact that lets a copy of rows
// whose alignment is unknown (ROAST's hashed W blocks in RzLinear's mapping)
// read each row from its 16-byte boundary below and hand the consumer one
// shift for the whole tile.
#ifndef TESSERA_ANALYSIS_ROWALIGNMENT_H
#define TESSERA_ANALYSIS_ROWALIGNMENT_H

#include "analysis/AxisInfo.h"

namespace tessera::analysis {

/// True when `ptr` (a 2-D tile of pointers to `eb`-byte elements) is a base
/// pointer plus offset terms each of which is either the same in every row
/// (constant along axis 0: a scalar, a column index) or a multiple of
/// `bytes / eb` in every element (a row index times such a stride). Row r's
/// address minus row 0's is then a multiple of `bytes` in every column.
bool rowsShareAlignment(mlir::Value ptr, int64_t eb, int64_t bytes, const AxisInfoAnalysis &axis);

} // namespace tessera::analysis

#endif
