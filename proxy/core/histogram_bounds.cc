#include "core/histogram_bounds.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace portico::core {

std::vector<double> default_bounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
}

std::vector<double> log_spaced_bounds(double lowest, double highest, int per_decade) {
  std::vector<double> out;
  // Capped well above what a config may ask for (the loader refuses more than
  // kMaxHistogramBuckets).
  for (int k = 0; out.size() <= 1000; ++k) {
    double v = lowest * std::pow(10.0, static_cast<double>(k) / per_decade);
    // Two significant digits through decimal text: the double nearest to the label it is
    // exposed with, never an ulp below it (round(v / scale) * scale can be: 4.9999999999999996e-05
    // for 5e-05, and an observation of exactly 50 us then missed its bucket).
    char text[32];
    std::snprintf(text, sizeof text, "%.1e", v);
    v = std::strtod(text, nullptr);
    if (v >= highest) {
      out.push_back(highest);
      break;
    }
    out.push_back(v);
  }
  return out;
}

} // namespace portico::core
