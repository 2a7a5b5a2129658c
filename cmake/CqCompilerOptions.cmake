# Compiler settings shared by the core library, the extension and the C++ tests.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options(-Wall -Wextra -Wno-unused-parameter)
  # -O3 lets the compiler vectorize the column loops of the kernels; no -march so that a build can
  # run on any x86-64 of the same OS.
  string(APPEND CMAKE_CXX_FLAGS_RELEASE " -O3")
  # The buffer pools are thread-local (batch/buffer.cc). In a module loaded with dlopen the default
  # TLS dialect calls __tls_get_addr on every access, 7 % of a loop instant's instructions; TLS
  # descriptors resolve to a plain offset once glibc has placed the module's TLS.
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-mtls-dialect=gnu2 CQ_HAVE_TLS_DESCRIPTORS)
  if(CQ_HAVE_TLS_DESCRIPTORS AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    add_compile_options(-mtls-dialect=gnu2)
  endif()
endif()
# The core is linked into one extension module whose only export is its init function. Hidden
# symbols let the compiler call and inline the core's functions directly, where -fPIC code must go
# through the PLT for every exported function (GCC assumes it may be interposed).
set(CMAKE_CXX_VISIBILITY_PRESET hidden)
set(CMAKE_VISIBILITY_INLINES_HIDDEN ON)
# Profile-guided optimization (setup.py drives it when CQ_PGO=1; off by default): GENERATE builds an
# instrumented core that the training run (cmake/pgo_training.py) writes branch counts from, next to
# the object files; USE rebuilds the same tree with them. The loop executor's row path is branchy
# code behind virtual calls, whose layout and inlining GCC gets right only with counts: the same
# sources run paper 000's recursive query 11–15 % faster. Partial training keeps what the run
# never reached optimized as without a profile. GCC's profile format only; other compilers build
# without.
set(CQ_PGO "OFF" CACHE STRING "Profile-guided optimization stage: OFF, GENERATE or USE")
set_property(CACHE CQ_PGO PROPERTY STRINGS OFF GENERATE USE)
if(NOT CQ_PGO STREQUAL "OFF" AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  message(WARNING "CQ_PGO=${CQ_PGO} needs GCC, not ${CMAKE_CXX_COMPILER_ID}: building without a profile")
  set(CQ_PGO "OFF" CACHE STRING "Profile-guided optimization stage: OFF, GENERATE or USE" FORCE)
endif()
if(CQ_PGO STREQUAL "GENERATE")
  add_compile_options(-fprofile-generate -fprofile-update=single)
  add_link_options(-fprofile-generate)
elseif(CQ_PGO STREQUAL "USE")
  add_compile_options(-fprofile-use -fprofile-partial-training -Wno-missing-profile)
endif()
option(CQ_SANITIZE "Build with address and undefined-behaviour sanitizers" OFF)
if(CQ_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
