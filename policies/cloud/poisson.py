"""The quantile of a Poisson count, as the obtainability model takes it (policies/cloud/obtainability.py): the
smallest n with P(X <= n) >= q. Up to a mean of 50 it is the plain sum of the probabilities term by term
(exp(-mean), then x mean/n), O(n) a call; past it the normal approximation.

A search settles the reclaim waves of every spot fleet size, some 15,000 quantiles at means that never repeat,
so each answer the sum gives is kept with a proof of where it holds, and a later mean inside a proven interval is
answered without summing, with the answer the sum would give (issue #27).

Why that is exact. The computed partial sum S_k(m) differs from the true F_k(m) = P(X <= k) by at most
E_k = (3k + 4) u (u = 2^-53: exp within 2 u, each of the k divisions and k products within u, each of the k
additions of positive terms within u of the sum, F_k <= 1); _error_bound is twice that. F_k falls as the mean
grows. So when the sum gave n at a mean a with S_{n-1}(a) + 2 E_{n-1} < q, every mean m >= a has
S_k(m) <= F_k(m) + E_k <= F_{n-1}(a) + E_{n-1} < q for every k < n (F_k <= F_{n-1}, E_k <= E_{n-1}); and when
it gave n at a mean b with S_n(b) - 2 E_n >= q, every mean m <= b has S_n(m) >= F_n(b) - E_n >= q. The sum
stops at n for every mean in [a, b]. Intervals are only grown by such certificates, so they never overlap,
and they sit in the order of n. Near a step of the quantile (within ~1e-12 of it) no certificate holds and the
sum is done, as before.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from functools import lru_cache
from statistics import NormalDist

_SUMMED_UP_TO = 50.0   # exp(-mean) underflows long before this matters; past it the normal approximation
_U = 2.0 ** -53

# q -> (lows, highs, counts): for each count n seen, the proven interval [low, high] of means the sum gives n
# for, ordered by n (and so by mean). Replaced whole when an interval is added, grown in place otherwise.
_PROVEN: dict[float, tuple[list[float], list[float], list[int]]] = {}


@lru_cache(maxsize=16)
def normal_quantile(q: float) -> float:
    """The standard normal quantile."""
    return NormalDist().inv_cdf(q)


def poisson_quantile(mean: float, q: float) -> int:
    """Smallest n with P(X <= n) >= q for X ~ Poisson(mean)."""
    if mean <= 0:
        return 0
    if mean > _SUMMED_UP_TO:   # the normal approximation is close here
        return math.ceil(mean + normal_quantile(q) * math.sqrt(mean))
    proven = _PROVEN.get(q)
    if proven is not None:
        lows, highs, counts = proven
        i = bisect_right(lows, mean) - 1
        if i >= 0 and mean <= highs[i]:
            return counts[i]
    n, below, reached = _summed(mean, q)
    _remember(q, mean, n, below, reached)
    return n


def summed_quantile(mean: float, q: float) -> int:
    """The quantile by the plain sum, whatever was proven before (for tests and the benchmark)."""
    if mean <= 0:
        return 0
    if mean > _SUMMED_UP_TO:
        return math.ceil(mean + normal_quantile(q) * math.sqrt(mean))
    return _summed(mean, q)[0]


def _summed(mean: float, q: float) -> tuple[int, float, float]:
    """(n, S_{n-1}, S_n): the sum of Poisson probabilities up to the first n it reaches q at."""
    term = cdf = math.exp(-mean)
    below = 0.0   # S_{-1}: the empty sum
    n = 0
    while cdf < q:
        n += 1
        below = cdf
        term *= mean / n
        cdf += term
    return n, below, cdf


def _error_bound(k: int) -> float:
    """Twice the bound on |S_k - F_k| (the module's docstring)."""
    return (6 * k + 8) * _U


def _remember(q: float, mean: float, n: int, below: float, reached: float) -> None:
    """Grow (or start) n's proven interval with `mean`, as far as its certificates allow."""
    from_here_up = n == 0 or below + 2 * _error_bound(n - 1) < q
    from_here_down = reached - 2 * _error_bound(n) >= q
    proven = _PROVEN.get(q)
    lows, highs, counts = proven if proven is not None else ([], [], [])
    j = bisect_left(counts, n)
    if j < len(counts) and counts[j] == n:
        if mean < lows[j] and from_here_up:
            lows[j] = mean
        if mean > highs[j] and from_here_down:
            highs[j] = mean
    elif from_here_up and from_here_down:
        _PROVEN[q] = (lows[:j] + [mean] + lows[j:], highs[:j] + [mean] + highs[j:], counts[:j] + [n] + counts[j:])
