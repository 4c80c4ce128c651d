#include "core/histogram_bounds.h"

#include <cmath>

namespace portico::core {

std::vector<double> log_spaced_bounds(double lowest, double highest, int per_decade) {
  std::vector<double> out;
  // Capped well above what a config may ask for (the loader refuses more than
  // kMaxHistogramBuckets).
  for (int k = 0; out.size() <= 1000; ++k) {
    double v = lowest * std::pow(10.0, static_cast<double>(k) / per_decade);
    double scale = std::pow(10.0, std::floor(std::log10(v)) - 1);
    v = std::round(v / scale) * scale;
    if (v >= highest) {
      out.push_back(highest);
      break;
    }
    out.push_back(v);
  }
  return out;
}

} // namespace portico::core
