// tessera::roast: ROAST-compressed layers (docs/kernels/roast.md, docs/api.md).
// One shared MemoryArray, Linear (ROAST-MM) and Embedding (ROAST lookup)
// layers that read their weights from it through hashes.
#ifndef TESSERA_ROAST_ROAST_H
#define TESSERA_ROAST_ROAST_H

#include "tessera/roast/Embedding.h"
#include "tessera/roast/Hash.h"
#include "tessera/roast/Linear.h"
#include "tessera/roast/MemoryArray.h"
#include "tessera/roast/Options.h"
#include "tessera/roast/TileWaves.h"

#endif
