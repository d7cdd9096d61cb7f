# Monitoring side of the console: store watcher, live curves, device grid (with its hosts' state), logs.
target_sources(parallax_ui PRIVATE
  models/DeviceGridModel.cpp
  models/DeviceGridModel.h
  models/LogTableModel.cpp
  models/LogTableModel.h
  models/MetricSeries.cpp
  models/MetricSeries.h
  models/MetricSeriesPyramid.h
  models/MetricSeriesTypes.h
  models/RankActivityPalette.cpp
  models/RankActivityPalette.h
  models/RunSnapshot.cpp
  models/RunSnapshot.h
  models/StoreWatcher.cpp
  models/StoreWatcher.h
  models/StoreWatcherWorker.cpp
  models/StoreWatcherWorker.h
  pages/LivePage.cpp
  pages/LivePage.h
  pages/LogsPage.cpp
  pages/LogsPage.h
  plots/CurvePlot.cpp
  plots/CurvePlot.h
  plots/HeatMapPlot.cpp
  plots/HeatMapPlot.h
  widgets/HostAlarmDelegate.cpp
  widgets/HostAlarmDelegate.h
)

# The guide and the spec reference, compiled in for Help (DocumentDialog) and installed beside them.
target_sources(parallax_ui PRIVATE widgets/DocumentDialog.cpp widgets/DocumentDialog.h)
file(GLOB _parallax_docs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
if(_parallax_docs)
  qt_add_resources(parallax_ui parallax_docs PREFIX /docs BASE "${PROJECT_SOURCE_DIR}/docs" FILES ${_parallax_docs})
  include(GNUInstallDirs)
  install(FILES ${_parallax_docs} DESTINATION ${PARALLAX_INSTALL_DOCDIR})
endif()
