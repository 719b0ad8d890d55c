#include "parastack/stats/binomial.h"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace parastack::stats {
namespace {

// The continued fraction of the regularized incomplete beta function (modified Lentz), valid for
// x < (a + 1) / (a + b + 2); the caller uses the symmetry I_x(a, b) = 1 - I_{1-x}(b, a) otherwise.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEpsilon = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEpsilon) break;
  }
  return h;
}

// I_x(a, b), the CDF of Beta(a, b) at x.
double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

double binomial_cdf(std::uint64_t successes, std::uint64_t trials, double p) {
  if (successes >= trials || p <= 0) return 1;
  if (p >= 1) return 0;
  // P(X <= k) = I_{1-p}(n - k, k + 1).
  return regularized_incomplete_beta(static_cast<double>(trials - successes), static_cast<double>(successes) + 1,
                                     1 - p);
}

double binomial_upper_bound(std::uint64_t successes, std::uint64_t trials, double beta) {
  if (!(beta > 0 && beta < 1)) throw std::invalid_argument("binomial_upper_bound needs 0 < beta < 1");
  if (trials == 0 || successes >= trials) return 1;
  const double n = static_cast<double>(trials);
  if (successes == 0) return -std::expm1(std::log(beta) / n);  // 1 - beta^(1/n), exactly
  // The CDF falls as p grows: bisect for P(X <= successes | p) = beta.
  double lo = static_cast<double>(successes) / n, hi = 1;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = (lo + hi) / 2;
    (binomial_cdf(successes, trials, mid) > beta ? lo : hi) = mid;
  }
  return hi;
}

double refresh_share(int j) {
  const double k = static_cast<double>(j) + 1;
  return 6 / (std::numbers::pi * std::numbers::pi * k * k);
}

}  // namespace parastack::stats
