// The exact binomial bounds against brute force: sums of the binomial pmf computed term by term.
#include "parastack/stats/binomial.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace parastack::stats {
namespace {

double pmf(std::uint64_t k_count, std::uint64_t n_count, double p) {
  const auto k = static_cast<double>(k_count), n = static_cast<double>(n_count);
  return std::exp(std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1) + k * std::log(p) +
                  (n - k) * std::log1p(-p));
}

double brute_cdf(std::uint64_t x, std::uint64_t n, double p) {
  double sum = 0;
  for (std::uint64_t k = 0; k <= x; ++k) sum += pmf(k, n, p);
  return sum;
}

TEST(Binomial, CdfMatchesTheSumOfItsTerms) {
  for (std::uint64_t n : {1u, 2u, 5u, 11u, 30u, 100u}) {
    for (std::uint64_t x = 0; x < n; ++x) {
      for (double p : {0.001, 0.05, 0.3, 0.5, 0.77, 0.99}) {
        EXPECT_NEAR(binomial_cdf(x, n, p), brute_cdf(x, n, p), 1e-10) << "x=" << x << " n=" << n << " p=" << p;
      }
    }
  }
}

TEST(Binomial, UpperBoundIsWhereTheCdfFallsToBeta) {
  for (std::uint64_t n : {3u, 16u, 86u, 2048u}) {
    for (std::uint64_t x : {std::uint64_t{0}, std::uint64_t{1}, n / 4, n / 2, n - 1}) {
      for (double beta : {0.05, 1e-3, 1e-9}) {
        const double up = binomial_upper_bound(x, n, beta);
        // Never below the truth's side (sound), and tight: a bound 0.1 % smaller would not do.
        EXPECT_LE(brute_cdf(x, n, up), beta * (1 + 1e-9)) << "x=" << x << " n=" << n;
        if (up < 1) {
          EXPECT_GT(brute_cdf(x, n, up * (1 - 1e-3)), beta) << "x=" << x << " n=" << n;
        }
      }
    }
  }
}

TEST(Binomial, RuleOfThreeAtZeroEvents) {
  // 1 - beta^(1/n), about 3/n at beta = 0.05.
  EXPECT_NEAR(binomial_upper_bound(0, 100, 0.05), 1 - std::pow(0.05, 0.01), 1e-12);
  EXPECT_NEAR(binomial_upper_bound(0, 1000, 0.05), 3.0 / 1000, 0.0001);
  EXPECT_DOUBLE_EQ(binomial_upper_bound(7, 7, 0.05), 1);
  EXPECT_DOUBLE_EQ(binomial_upper_bound(0, 0, 0.05), 1);
  EXPECT_THROW(binomial_upper_bound(1, 2, 0), std::invalid_argument);
}

// What "sound" means: whatever the true p, the bound falls below it with probability <= beta.
// Computed exactly: the probability of every count x whose bound is below p, summed.
TEST(Binomial, UpperBoundCoversTheTruthWithConfidenceOneMinusBeta) {
  for (std::uint64_t n : {5u, 20u, 60u}) {
    for (double beta : {0.1, 0.01}) {
      for (double p = 0.01; p < 1; p += 0.0137) {
        double miss = 0;
        for (std::uint64_t x = 0; x <= n; ++x) {
          if (binomial_upper_bound(x, n, beta) < p) miss += pmf(x, n, p);
        }
        EXPECT_LE(miss, beta * (1 + 1e-9)) << "n=" << n << " p=" << p;
      }
    }
  }
}

TEST(Binomial, RefreshSharesSumToOne) {
  double sum = 0;
  for (int j = 0; j < 1'000'000; ++j) sum += refresh_share(j);
  EXPECT_NEAR(sum, 1, 1e-5);
  EXPECT_GT(refresh_share(0), refresh_share(1));
}

}  // namespace
}  // namespace parastack::stats
