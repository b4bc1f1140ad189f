// Input the back end cannot compile gets a located error, never a crash.
// RUN: not tessera-translate %s 2>&1 | FileCheck %s
// RUN: not tessera-translate --arch=sm_13 %s 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not tessera-translate --emit=wat %s 2>&1 | FileCheck %s --check-prefix=USAGE

// CHECK: errors.mlir:[[@LINE+6]]:10: error: failed to legalize operation 'tile.program_id'
// CHECK-NOT: see current operation
// ARCH: unknown GPU architecture 'sm_13'
// USAGE: --emit must be llvm, ptx, cubin or ptxas-report

func.func @k(%p: !llvm.ptr<1>) attributes {tessera.kernel} {
  %pid = tile.program_id 0 : i32
  llvm.store %pid, %p : i32, !llvm.ptr<1>
  return
}
