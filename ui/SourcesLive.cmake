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
