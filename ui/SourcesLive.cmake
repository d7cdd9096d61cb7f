# QCustomPlotQt6's exported target links Qt6::PrintSupport, which the dependency list does not
# find; without a global target of that name CMake cannot generate the build.
if(NOT TARGET Qt6::PrintSupport)
  find_package(Qt6 REQUIRED COMPONENTS PrintSupport)
  set_target_properties(Qt6::PrintSupport PROPERTIES IMPORTED_GLOBAL TRUE)
endif()
# Monitoring side of the console: store watcher, live curves, device grid, logs.
target_sources(parallax_ui PRIVATE
  models/DeviceGridModel.cpp
  models/DeviceGridModel.h
  models/LogTableModel.cpp
  models/LogTableModel.h
  models/MetricSeries.cpp
  models/MetricSeries.h
  models/MetricSeriesPyramid.h
  models/MetricSeriesTypes.h
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
)
