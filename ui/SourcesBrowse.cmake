# Configuration and browsing side of the console: the New run form, the runs list, the comparison,
# the main window and the widgets they draw with.
target_sources(parallax_ui PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/MainWindow.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/AtomicFile.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/CompareRun.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/CompareRunsModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/ResumeStepReader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunCheckModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunDeleter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunExporter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunFilterModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunLauncher.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunListModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunMetricsCsv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/RunStoreThread.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/SpecDiffModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/SpecFormModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/SummaryModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pages/ComparePage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pages/EstimatePanel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pages/NewRunPage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pages/RunsPage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plots/RunColors.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plots/SmoothingBox.cpp
  ${CMAKE_CURRENT_LIST_DIR}/widgets/DeviceGridDiagram.cpp
  ${CMAKE_CURRENT_LIST_DIR}/widgets/EditHoldDelegate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/widgets/FileDialogs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/widgets/MemoryBar.cpp
  ${CMAKE_CURRENT_LIST_DIR}/widgets/PageIcons.cpp
  ${CMAKE_CURRENT_LIST_DIR}/widgets/TableExport.cpp
)

# The example runs compiled in, for a console installed without resources/runs beside it.
file(GLOB _parallax_presets CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/resources/runs/*.toml")
if(_parallax_presets)
  qt_add_resources(parallax_ui parallax_presets PREFIX /runs BASE "${PROJECT_SOURCE_DIR}/resources/runs"
                   FILES ${_parallax_presets})
endif()

# What an installed console finds beside it: the example runs (NewRunPage looks in
# <prefix>/share/parallax/runs), its desktop entry and its icon.
include(GNUInstallDirs)
install(FILES ${_parallax_presets} DESTINATION ${CMAKE_INSTALL_DATADIR}/parallax/runs)
install(FILES "${PROJECT_SOURCE_DIR}/resources/parallax.desktop" DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES "${PROJECT_SOURCE_DIR}/resources/icons/parallax.svg"
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
