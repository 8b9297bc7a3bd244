# Installs the library for custom launchers as a CMake package:
#
#   find_package(gossip_rdzv 0.1 REQUIRED)
#   target_link_libraries(my_launcher PRIVATE gossip_rdzv::gossip_rdzv)
#
# Layout under the prefix: include/gossip_rdzv/*.hpp, lib/libgossip_rdzv.so*,
# lib/cmake/gossip_rdzv/{gossip_rdzvConfig,gossip_rdzvConfigVersion,gossip_rdzvTargets}.cmake.
# The gossip-rdzv binary is installed by tools/gossip-rdzv/CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(GOSSIP_RDZV_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/gossip_rdzv"
    CACHE STRING "Where gossip_rdzvConfig.cmake is installed, relative to the prefix")

install(TARGETS gossip_rdzv
  EXPORT gossip_rdzvTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Only the public API: include/gossip_rdzv/. Nothing from src/ (ZeroMQ, spdlog, msgpack stay
# private to the shared library, so a launcher needs none of their headers).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/gossip_rdzv
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

install(EXPORT gossip_rdzvTargets
  NAMESPACE gossip_rdzv::
  FILE gossip_rdzvTargets.cmake
  DESTINATION ${GOSSIP_RDZV_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/gossip_rdzvConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gossip_rdzvConfig.cmake
  INSTALL_DESTINATION ${GOSSIP_RDZV_INSTALL_CMAKEDIR})
# The releases that may change the ABI (bump GOSSIP_RDZV_SOVERSION) are the ones this
# rejects (docs/abi.md): in 0.x a minor release, from 1.0 on a major one. So a version
# find_package() accepts has the SONAME the caller was built against.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(gossip_rdzv_compatibility SameMinorVersion)
else()
  set(gossip_rdzv_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/gossip_rdzvConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${gossip_rdzv_compatibility})

install(FILES
  ${PROJECT_BINARY_DIR}/gossip_rdzvConfig.cmake
  ${PROJECT_BINARY_DIR}/gossip_rdzvConfigVersion.cmake
  DESTINATION ${GOSSIP_RDZV_INSTALL_CMAKEDIR})
