# What `cmake --install` gives besides the targets' own rules (bin, lib,
# include, the CMake and pkg-config files), and the Debian package:
# `cpack -G DEB` in the build directory. The package's dependencies are
# the Debian libraries its files link, found by dpkg-shlibdeps (no list
# kept by hand); tools/check-deb.sh installs it on a fresh Debian 12.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
if(EXISTS ${PROJECT_SOURCE_DIR}/docs)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hybridprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hybridprof developers <hybridprof@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "sampling-plus-tracing profiler for MPI, OpenMP, CUDA and Python jobs, no rebuild")
set(CPACK_PACKAGE_DESCRIPTION
    "hybridprof samples every thread of a program (perf_event) and traces its MPI, OpenMP, CUDA and NVTX calls through LD_PRELOAD, with Python and native frames in one stack, and writes one OTF2 archive per job for Vampir, ViTE and Perfetto. hybridprof-report says what was slow, and why.")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Without the build's debug information (RelWithDebInfo triples the size):
# the profiler names its own frames [hybridprof] from its code ranges.
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
