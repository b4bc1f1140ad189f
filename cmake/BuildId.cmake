# Script mode (cmake -DSRC=... -DOUT=... -DLLVM=... -P BuildId.cmake): hashes the
# sources that decide generated code (compiler/, dialects/) and the LLVM version
# into TESSERA_BUILD_ID. compilerVersion() carries it, so the kernel cache key
# changes whenever code generation may have: a rebuilt compiler never picks up
# kernels that an older one compiled. The header is rewritten only when the id
# changes, so an unchanged tree recompiles nothing.
file(GLOB_RECURSE sources LIST_DIRECTORIES false
     "${SRC}/compiler/*.cpp" "${SRC}/compiler/*.h" "${SRC}/dialects/*.cpp"
     "${SRC}/dialects/*.h" "${SRC}/dialects/*.td")
list(SORT sources)
set(all "${LLVM}")
foreach(f IN LISTS sources)
  file(SHA256 "${f}" h)
  file(RELATIVE_PATH rel "${SRC}" "${f}")
  string(APPEND all "${rel}:${h};")
endforeach()
string(SHA256 id "${all}")
string(SUBSTRING "${id}" 0 12 id)
set(content "#define TESSERA_BUILD_ID \"${id}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
