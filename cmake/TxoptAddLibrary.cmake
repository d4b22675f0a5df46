# SPDX-License-Identifier: Apache-2.0
# txopt_add_library(name SOURCES... [DEPENDS targets...] [LINK_LIBS libs...])
#
# Every txopt library links the shared libMLIR/libLLVM that Debian's stock
# mlir-opt-22 uses. Static MLIR archives would give the pass plugin a second
# copy of MLIR's registries when it is loaded into mlir-opt-22, and make every
# tool link for minutes; the dylibs avoid both.
function(txopt_add_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PUBLIC ${ARG_LINK_LIBS} MLIR LLVM)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  add_dependencies(${name} mlir-headers)
endfunction()
