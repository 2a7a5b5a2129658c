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
option(CQ_SANITIZE "Build with address and undefined-behaviour sanitizers" OFF)
if(CQ_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
