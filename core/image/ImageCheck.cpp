#include "core/image/ImageCheck.h"

#include "core/image/ImageError.h"

#include <new>

namespace parallax {

ImageCheckResult checkImages(const std::vector<std::string>& paths, const DecodeOptions& options) {
    ImageCheckResult result;
    for (const std::string& path : paths) {
        ++result.checked;
        try {
            decodeImageFile(path, options);
        } catch (const ImageError& e) {
            result.problems.push_back({path, e.reason()});
        } catch (const std::bad_alloc&) {
            result.problems.push_back({path, "out of memory decoding it"});
        }
    }
    return result;
}

} // namespace parallax
