# Pipeline view: a sampled step's timeline and its measured bubbles next to the schedule's.
target_sources(parallax_ui PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/models/BubbleHistory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/BubbleHistory.h
  ${CMAKE_CURRENT_LIST_DIR}/models/PipelineRunModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/PipelineRunModel.h
  ${CMAKE_CURRENT_LIST_DIR}/models/SpanModel.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/SpanModel.h
  ${CMAKE_CURRENT_LIST_DIR}/pages/PipelinePage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pages/PipelinePage.h
  ${CMAKE_CURRENT_LIST_DIR}/plots/PipelineTimeline.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plots/PipelineTimeline.h
  ${CMAKE_CURRENT_LIST_DIR}/plots/PlotExport.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plots/PlotExport.h
)
