# Third-party libraries, all from Debian's packages (see scripts/install.sh for the names).
# Header-only use where the package allows it, so the Python wheel needs no extra .so at run time.
find_package(fmt 9 REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(CLI11 2.1 REQUIRED)

# toml++: the Debian package ships a shared library, but the headers carry the whole
# implementation; we use it header-only in the one translation unit that parses TOML.
find_path(TOMLPP_INCLUDE_DIR toml++/toml.h REQUIRED)
add_library(trnsim_tomlpp INTERFACE)
target_include_directories(trnsim_tomlpp SYSTEM INTERFACE ${TOMLPP_INCLUDE_DIR})
target_compile_definitions(trnsim_tomlpp INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)

if(TRNSIM_BUILD_TESTS AND NOT TRNSIM_BUILD_PYTHON)
  find_package(GTest 1.12 REQUIRED)
endif()
if(TRNSIM_BUILD_BENCH AND NOT TRNSIM_BUILD_PYTHON)
  find_package(benchmark 1.7 REQUIRED)
  find_package(BLAS)
endif()
