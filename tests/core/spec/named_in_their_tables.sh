#!/bin/sh
# docs/architecture.md, "Where a change goes": a model kind is named only by its row in the kinds'
# table, its family's tensors, its builder and its model; a pipeline schedule only by its rows and
# its order of passes. Everything else reads the tables, so that a new kind or schedule touches the
# files the doc counts. This checks that against a grep of the production code (core, trainer, ui,
# app): a file that names a kind or a schedule outside those places fails it, with the line.
#   named_in_their_tables.sh SOURCE_DIR
set -u
cd "$1" || exit 2

# The values, from their enums.
kinds=$(sed -n 's/^enum class ModelKind { *\(.*\) *};/\1/p' core/spec/Choice.h | tr -d ' ' | tr ',' ' ')
schedules=$(sed -n 's/^enum class Schedule { *\(.*\) *};/\1/p' core/spec/Choice.h | tr -d ' ' | tr ',' ' ')
[ -n "$kinds" ] && [ -n "$schedules" ] || { echo "cannot read ModelKind and Schedule from core/spec/Choice.h"; exit 2; }

failed=0
check() { # ENUM VALUE ALLOWED-REGEX
    files=$(grep -rlwE --include='*.h' --include='*.cpp' "$1::$2" core trainer ui app)
    for f in $files; do
        if ! echo "$f" | grep -qE "^($3)$"; then
            echo "$f names $1::$2 outside its tables (docs/architecture.md, Where a change goes):"
            grep -nwE "$1::$2" "$f" | sed 's/^/    /'
            failed=1
        fi
    done
}

# A kind: its row (ModelKinds.cpp), its family's tensors and presets (core/spec/<Family>Models.cpp),
# its builder (trainer/models/Model.cpp) and its model (trainer/models/<Kind>Model.h). The default
# kind is written where the spec's and the dimensions' defaults are. Qwen-Image's text encoder is a
# Qwen2.5-VL language model: it builds that kind by name.
for k in $kinds; do
    allowed='core/spec/ModelKinds\.cpp|core/spec/[A-Za-z0-9]*Models\.cpp|trainer/models/Model\.cpp|trainer/models/[A-Za-z0-9]*Model\.h'
    [ "$k" = Gpt ] && allowed="$allowed|core/spec/RunSpec\.h|core/spec/ModelDims\.h"
    [ "$k" = Qwen2_5_Vl ] && allowed="$allowed|trainer/cache/QwenImageTextEncoder\.cpp"
    check ModelKind "$k" "$allowed"
done

# A schedule: its rows (Choice.cpp, ScheduleInfo.cpp) and its order of passes (PipelineSchedule.cpp).
# The default schedule is written where a spec's default and its fallbacks are.
for s in $schedules; do
    allowed='core/spec/Choice\.cpp|core/spec/ScheduleInfo\.cpp|trainer/parallel/PipelineSchedule\.cpp'
    [ "$s" = OneFOneB ] && allowed="$allowed|core/spec/RunSpec\.h|core/spec/Estimates\.cpp|ui/models/SpanModel\.h"
    check Schedule "$s" "$allowed"
done

[ $failed -eq 0 ] && echo "every model kind and schedule is named only in its tables"
exit $failed
