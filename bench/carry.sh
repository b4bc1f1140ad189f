#!/bin/sh
# Copies the built tools and libtessera.so (stripped) into .carry/, the folder
# that travels to the lent GPU machine (see bench/NOTES.md).
set -e
cd "$(dirname "$0")/.."
rm -rf .carry && mkdir -p .carry/bin .carry/lib
for t in tessera tessera-tests basics_check matmul_bench basics_bench roast_bench autotune_bench quant8_bench tutorials_bench attention_bench example_roast_mlp example_adamw8bit example_tutorials example_flash_attention example_scaled_matmul_fp8 example_dependent_launch example_cluster_multicast; do
  cp build/bin/$t .carry/bin/ && strip .carry/bin/$t
done
# The tools need the library by its SONAME (libtessera.so.MAJOR.MINOR).
so=$(objdump -p build/lib/libtessera.so | awk '$1 == "SONAME" {print $2}')
cp -L build/lib/libtessera.so .carry/lib/$so && strip .carry/lib/$so
ln -sf $so .carry/lib/libtessera.so
du -sh .carry
