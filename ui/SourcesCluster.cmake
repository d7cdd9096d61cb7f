# Cluster side of the console: the profiles, preflight of their hosts off the GUI thread, and the
# Cluster page.
target_sources(parallax_ui PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/models/ClusterHostsModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/ClusterHostsModel.h
  ${CMAKE_CURRENT_LIST_DIR}/models/ClusterProfileListModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/ClusterProfileListModel.h
  ${CMAKE_CURRENT_LIST_DIR}/models/PreflightRunner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/PreflightRunner.h
  ${CMAKE_CURRENT_LIST_DIR}/models/SlurmPartitionsModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/SlurmPartitionsModel.h
  ${CMAKE_CURRENT_LIST_DIR}/pages/ClusterPage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pages/ClusterPage.h
)

# The example profile, which "New profile…" copies: compiled in, so that an installed console has
# it too, and installed beside the example runs for a person to read.
qt_add_resources(parallax_ui parallax_cluster_example PREFIX /clusters BASE "${PROJECT_SOURCE_DIR}/resources/clusters"
                 FILES "${PROJECT_SOURCE_DIR}/resources/clusters/example.toml")
include(GNUInstallDirs)
install(FILES "${PROJECT_SOURCE_DIR}/resources/clusters/example.toml" DESTINATION ${CMAKE_INSTALL_DATADIR}/parallax/clusters)
