// tessera-opt: mlir-opt with the tile dialect and Tessera's passes registered.
#include "tessera/Compiler.h"

int main(int argc, char **argv) { return tessera::optMain(argc, argv); }
