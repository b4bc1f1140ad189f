// The Tessera runtime: include this for everything.
#ifndef TESSERA_RUNTIME_H
#define TESSERA_RUNTIME_H

#include "tessera/Backend.h"
#include "tessera/Context.h"
#include "tessera/Error.h"
#include "tessera/Half.h"
#include "tessera/Kernel.h"
#include "tessera/LaunchArgs.h"
#include "tessera/Memory.h"
#include "tessera/Module.h"
#include "tessera/Stream.h"
#include "tessera/Types.h"

#endif
