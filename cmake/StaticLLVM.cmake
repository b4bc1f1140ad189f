# Debian's static MLIR archives name the shared `LLVM` target as their dependency.
# Linking libLLVM.so next to static NVPTX archives registers options twice and aborts at
# start-up, so swap `LLVM` for the static component archives in every MLIR target we use.
llvm_map_components_to_libnames(TESSERA_LLVM_STATIC_LIBS
  Core Support IRReader BitReader BitWriter Linker Passes TransformUtils Analysis
  Target TargetParser MC NVPTXCodeGen NVPTXDesc NVPTXInfo IPO FrontendOpenMP)

function(_tessera_patch_target tgt)
  if(NOT TARGET ${tgt})
    return()
  endif()
  get_property(done GLOBAL PROPERTY _tessera_patched_${tgt})
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY _tessera_patched_${tgt} TRUE)
  get_target_property(deps ${tgt} INTERFACE_LINK_LIBRARIES)
  if(NOT deps)
    return()
  endif()
  set(out)
  foreach(d IN LISTS deps)
    if(d STREQUAL "LLVM")
      list(APPEND out ${TESSERA_LLVM_STATIC_LIBS})
    else()
      list(APPEND out ${d})
      if(d MATCHES "^MLIR")
        _tessera_patch_target(${d})
      endif()
    endif()
  endforeach()
  set_target_properties(${tgt} PROPERTIES INTERFACE_LINK_LIBRARIES "${out}")
endfunction()

function(tessera_use_static_llvm libs)
  foreach(l IN LISTS libs)
    _tessera_patch_target(${l})
  endforeach()
endfunction()
