// rand, randn, randint, randint4x.
#include "BuiltinCall.h"

namespace tessera::fe::builtins {

SemValue BuiltinCall::onRandom() { return fail(L, name + "() is not implemented yet"); }

} // namespace tessera::fe::builtins
