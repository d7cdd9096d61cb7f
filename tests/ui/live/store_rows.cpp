// A short-lived writer of a run's rows, as a supervisor is: opens the store, writes COUNT steps
// from FIRST on, closes it and exits. Prints how many steps the run then has.
//
//   parallax_test_store_rows STORE RUN FIRST COUNT

#include "core/store/BatchedWriter.h"
#include "core/store/RunStore.h"

#include <chrono>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cerr << "usage: " << argv[0] << " STORE RUN FIRST COUNT\n";
        return 2;
    }
    try {
        parallax::RunStore store(argv[1]);
        const int64_t run = std::atoll(argv[2]);
        const int64_t first = std::atoll(argv[3]);
        const int64_t count = std::atoll(argv[4]);
        {
            parallax::BatchedWriter writer(store, run, std::chrono::hours(1));
            for (int64_t s = first; s < first + count; ++s) {
                parallax::StepEvent e;
                e.step = s;
                e.loss = 2.0 - 0.001 * static_cast<double>(s);
                e.t = 1.7e9 + static_cast<double>(s);
                writer.add(e);
            }
            writer.flush();
        }
        std::cout << "steps " << store.metrics(run).size() << "\n";
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
    return 0;
}
