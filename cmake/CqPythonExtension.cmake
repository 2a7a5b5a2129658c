# The private extension module cq_core._core: pybind11 bindings over the core library, nothing else.
find_package(Python3 COMPONENTS Interpreter Development.Module REQUIRED)
find_package(pybind11 CONFIG REQUIRED)
pybind11_add_module(_core MODULE "${PROJECT_SOURCE_DIR}/cq_core/_core.cpp")
target_link_libraries(_core PRIVATE cq_engine)
target_compile_definitions(_core PRIVATE CQ_PGO_STAGE="${CQ_PGO}")
