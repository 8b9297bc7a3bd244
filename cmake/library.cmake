# The shared library gossip_rdzv, installed by cmake/install.cmake: every layer's object
# library in one file, so a launcher in C++, C or Python (ctypes) loads one library. Each
# part is declared, with its sources, by its own directory's CMakeLists.txt.
add_library(gossip_rdzv SHARED
  $<TARGET_OBJECTS:gossip_rdzv_protocol>
  $<TARGET_OBJECTS:gossip_rdzv_output>
  $<TARGET_OBJECTS:gossip_rdzv_transport>
  $<TARGET_OBJECTS:gossip_rdzv_store_core>
  $<TARGET_OBJECTS:gossip_rdzv_store_client>
  $<TARGET_OBJECTS:gossip_rdzv_runtime>
  $<TARGET_OBJECTS:gossip_rdzv_capi>
)
add_library(gossip_rdzv::gossip_rdzv ALIAS gossip_rdzv)
target_include_directories(gossip_rdzv PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(gossip_rdzv PRIVATE cppzmq spdlog::spdlog Threads::Threads)
set_target_properties(gossip_rdzv PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0)
