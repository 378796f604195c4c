# OpenMP for relucore::core, decided by the project that compiles the headers.
#
# Shared by relucore's own CMakeLists.txt (its tests, the Python module,
# add_subdirectory/FetchContent users) and by the installed package config,
# so an installed relucore looks for OpenMP with the consumer's compiler, not
# with the one relucore was installed with.
#
#   _relucore_use_openmp(<target> <ON|OFF> <result variable>)
#
# With ON, finds OpenMP for C++ (quietly) and, if found, links
# OpenMP::OpenMP_CXX into <target> and defines RELUCORE_WITH_OPENMP on it.
# Otherwise prints a STATUS line: the headers then compile to serial loops.
# <result variable> is set to ON or OFF in the caller's scope.
include_guard(GLOBAL)

function(_relucore_use_openmp target use result)
  get_target_property(_defs ${target} INTERFACE_COMPILE_DEFINITIONS)
  if(_defs AND "RELUCORE_WITH_OPENMP" IN_LIST _defs)
    set(${result} ON PARENT_SCOPE)  # already done (the package was found twice)
    return()
  endif()
  set(_with OFF)
  if(NOT use)
    message(STATUS "relucore: OpenMP off (relucore_USE_OPENMP=${use}): independent problems run serially")
  else()
    get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
    if(NOT "CXX" IN_LIST _languages)
      message(STATUS "relucore: C++ is not enabled in this project, so OpenMP cannot be checked: "
                     "independent problems run serially")
    else()
      find_package(OpenMP QUIET COMPONENTS CXX)
      if(OpenMP_CXX_FOUND)
        target_link_libraries(${target} INTERFACE OpenMP::OpenMP_CXX)
        target_compile_definitions(${target} INTERFACE RELUCORE_WITH_OPENMP)
        set(_with ON)
        message(STATUS "relucore: OpenMP ${OpenMP_CXX_VERSION} for ${CMAKE_CXX_COMPILER_ID} "
                       "${CMAKE_CXX_COMPILER_VERSION} (RELUCORE_WITH_OPENMP)")
      else()
        message(STATUS "relucore: OpenMP not found for ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}: "
                       "independent problems run serially")
      endif()
    endif()
  endif()
  set(${result} ${_with} PARENT_SCOPE)
endfunction()
