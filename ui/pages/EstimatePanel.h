#pragma once

#include "core/spec/Estimates.h"

#include <QWidget>

#include <cstdint>
#include <vector>

class QLabel;

namespace parallax {

class DeviceGridDiagram;
class MemoryBar;
class SpecFormModel;

// What the spec in the form will cost, kept current as the form changes: parameters, FLOPs per
// token, memory of the most loaded device against what the device has, the pipeline's theoretical
// bubble, and the layout's ranks.
class EstimatePanel : public QWidget {
    Q_OBJECT
public:
    explicit EstimatePanel(SpecFormModel* model, QWidget* parent = nullptr);

    // Parameters one rank of each pipeline stage holds (its tensor-parallel shard, before ZeRO-3
    // shards them): what that rank reports in run_start (rank 0: stage 0).
    static std::vector<int64_t> heldParameters(const RunSpec& spec, const Estimates& estimates);

    MemoryBar* memoryBar() const { return m_memory; }
    DeviceGridDiagram* deviceGrid() const { return m_grid; }
    QString parametersText() const;
    QString bubbleText() const;
    QString memoryTitleText() const;
    // A published model's memory per device trained whole, with [finetune]'s parts frozen, and with
    // LoRA, the spec's own way marked; "" for other kinds.
    static QString finetuneMemoryText(const RunSpec& spec);

private:
    void refresh();
    // "1.2B whole model", with what each rank holds where stages or tensor parallelism split it.
    QString describeParameters(const RunSpec& spec, const Estimates& e) const;
    // The theoretical bubble with its formula and numbers, or "none (no pipeline)".
    QString bubbleDescription(const RunSpec& spec, const Estimates& e) const;

    SpecFormModel* m_model;
    QLabel* m_params = nullptr;
    QLabel* m_flops = nullptr;
    QLabel* m_tokens = nullptr;
    QLabel* m_memoryTitle = nullptr;
    MemoryBar* m_memory = nullptr;
    QLabel* m_stages = nullptr;
    QLabel* m_finetune = nullptr;
    QLabel* m_bubble = nullptr;
    QLabel* m_error = nullptr;
    DeviceGridDiagram* m_grid = nullptr;
};

} // namespace parallax
