# The shared library gossip_rdzv, installed by cmake/install.cmake: every layer's object
# library in one file, so a launcher in C++, C or Python (ctypes) loads one library. Each
# part is declared, with its sources, by its own directory's CMakeLists.txt.
#
# It exports the public API only (docs/abi.md): its objects are compiled with hidden
# visibility, the public headers mark what is exported (GOSSIP_RDZV_API,
# include/gossip_rdzv/export.h), and a linker version script keeps everything else local.
# The gossip-rdzv command and the tests that reach into src/ link gossip_rdzv_internal, a
# static library of the same objects, instead.
set(GOSSIP_RDZV_LIBRARY_PARTS
  gossip_rdzv_protocol
  gossip_rdzv_output
  gossip_rdzv_transport
  gossip_rdzv_store_core
  gossip_rdzv_store_client
  gossip_rdzv_runtime
  gossip_rdzv_capi
)
set_target_properties(${GOSSIP_RDZV_LIBRARY_PARTS} PROPERTIES
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)

set(gossip_rdzv_objects "")
foreach(part ${GOSSIP_RDZV_LIBRARY_PARTS})
  list(APPEND gossip_rdzv_objects $<TARGET_OBJECTS:${part}>)
endforeach()

add_library(gossip_rdzv SHARED ${gossip_rdzv_objects})
add_library(gossip_rdzv::gossip_rdzv ALIAS gossip_rdzv)
target_include_directories(gossip_rdzv PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(gossip_rdzv PRIVATE cppzmq PkgConfig::sodium spdlog::spdlog Threads::Threads)

configure_file(${PROJECT_SOURCE_DIR}/cmake/gossip_rdzv.map.in
               ${PROJECT_BINARY_DIR}/gossip_rdzv.map @ONLY)
target_link_options(gossip_rdzv PRIVATE
  "LINKER:--version-script=${PROJECT_BINARY_DIR}/gossip_rdzv.map")
set_property(TARGET gossip_rdzv APPEND PROPERTY LINK_DEPENDS ${PROJECT_BINARY_DIR}/gossip_rdzv.map)
set_target_properties(gossip_rdzv PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${GOSSIP_RDZV_SOVERSION})

# The same objects for the command line and white-box tests: they use src/ internals that
# the shared library does not export. Not installed.
add_library(gossip_rdzv_internal STATIC ${gossip_rdzv_objects})
target_include_directories(gossip_rdzv_internal PUBLIC
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(gossip_rdzv_internal PUBLIC cppzmq PkgConfig::sodium spdlog::spdlog Threads::Threads)
