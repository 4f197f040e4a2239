"""numpy references for the λG benchmark suite (benchmarks/suite/*.lg, issue 13).

One function per program: given the program's size parameters, it builds the same deterministic
inputs the program builds (the (m*t + c) mod 13 formulas, the same constants) and computes the
value the program should have, as Python data (ints, floats, tuples, lists) the way hetprof reads
a λG value. Sums follow λG's `reduce` (neighbours paired level by level, `tree_sum`) and each
formula is written in the program's order of operations, so floats agree to the last bits except
where the program approximates what numpy computes exactly (sqrt, exp and log in blackscholes and
nbody3d: there numpy's functions are the reference and the port's approximations must come within
the tests' tolerance).

`SUITE` maps each program's file name to its reference and the quick sizes the tests run it at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Params = dict[str, int]


def formula(count: int, multiplier: int, offset: int, modulus: int = 13) -> np.ndarray:
    """(multiplier * t + offset) mod modulus for t < count: the programs' `vals[k - k / 13 * 13]`
    (or `k - k / 10 * 10`), as integers."""
    return (np.arange(count, dtype=np.int64) * multiplier + offset) % modulus


def scaled(count: int, multiplier: int, offset: int) -> np.ndarray:
    """The PolyBench ports' inputs: formula(...) / 13.0 as floats."""
    return formula(count, multiplier, offset).astype(np.float64) / 13.0


def tree_sum(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """λG's `reduce (+)` along an axis: neighbours paired level by level, an odd last element
    carried to the next level (graphs.semantics.explicit)."""
    x = np.moveaxis(np.asarray(values), axis, -1)
    if x.shape[-1] == 0:
        return np.zeros(x.shape[:-1], dtype=x.dtype)
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        paired = x[..., 0:2 * half:2] + x[..., 1:2 * half:2]
        x = np.concatenate([paired, x[..., 2 * half:]], axis=-1) if x.shape[-1] % 2 else paired
    return x[..., 0]


def _square(flat: np.ndarray, n: int) -> np.ndarray:
    return flat.reshape(n, n)


# -- PolyBench/GPU ---------------------------------------------------------------------------


def gemm(p: Params) -> Any:
    n = p["n"]
    a, b, c = (_square(scaled(n * n, m, k), n) for m, k in ((7, 3), (5, 1), (3, 2)))
    ab = tree_sum(a[:, None, :] * b.T[None, :, :])
    return (1.5 * ab + 1.2 * c).ravel().tolist()


def two_mm(p: Params) -> Any:
    n = p["n"]
    a, b, c, d = (_square(scaled(n * n, m, k), n) for m, k in ((7, 3), (5, 1), (3, 2), (11, 4)))
    tmp = 1.5 * tree_sum(a[:, None, :] * b.T[None, :, :])
    return (tree_sum(tmp[:, None, :] * c.T[None, :, :]) + 1.2 * d).ravel().tolist()


def atax(p: Params) -> Any:
    n = p["n"]
    a = _square(scaled(n * n, 7, 3), n)
    x = scaled(n, 5, 1)
    tmp = tree_sum(a * x[None, :])
    return tree_sum(a.T * tmp[None, :]).tolist()


def bicg(p: Params) -> Any:
    n = p["n"]
    a = _square(scaled(n * n, 7, 3), n)
    r, q = scaled(n, 5, 1), scaled(n, 3, 2)
    s = tree_sum(r[None, :] * a.T)
    return (s.tolist(), tree_sum(a * q[None, :]).tolist())


def mvt(p: Params) -> Any:
    n = p["n"]
    a = _square(scaled(n * n, 7, 3), n)
    x1, x2, y1, y2 = (scaled(n, m, k) for m, k in ((5, 1), (3, 2), (11, 4), (2, 9)))
    return ((x1 + tree_sum(a * y1[None, :])).tolist(),
            (x2 + tree_sum(a.T * y2[None, :])).tolist())


def gesummv(p: Params) -> Any:
    n = p["n"]
    a, b = (_square(scaled(n * n, m, k), n) for m, k in ((7, 3), (5, 1)))
    x = scaled(n, 3, 2)
    return (1.5 * tree_sum(a * x[None, :]) + 1.2 * tree_sum(b * x[None, :])).tolist()


def syrk(p: Params) -> Any:
    n = p["n"]
    a, c = (_square(scaled(n * n, m, k), n) for m, k in ((7, 3), (3, 2)))
    return (1.2 * c + 1.5 * tree_sum(a[:, None, :] * a[None, :, :])).ravel().tolist()


def conv2d(p: Params) -> Any:
    n = p["n"]
    a = _square(scaled(n * n, 7, 3), n)
    b = np.zeros((n, n))
    if n >= 3:
        def at(di: int, dj: int) -> np.ndarray:
            return a[1 + di:n - 1 + di, 1 + dj:n - 1 + dj]
        b[1:-1, 1:-1] = (0.2 * at(-1, -1) - 0.3 * at(0, -1) + 0.4 * at(1, -1)
                         + 0.5 * at(-1, 0) + 0.6 * at(0, 0) + 0.7 * at(1, 0)
                         - 0.8 * at(-1, 1) - 0.9 * at(0, 1) + 0.1 * at(1, 1))
    return b.ravel().tolist()


def jacobi1d(p: Params) -> Any:
    n, steps = p["n"], p["steps"]
    a = scaled(n, 7, 3)
    for _ in range(steps):
        b = a.copy()
        b[1:-1] = 0.33333 * (a[:-2] + a[1:-1] + a[2:])
        a = b
    return a.tolist()


def jacobi2d(p: Params) -> Any:
    n, steps = p["n"], p["steps"]
    a = _square(scaled(n * n, 7, 3), n)
    for _ in range(steps):
        b = a.copy()
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1]
                               + a[:-2, 1:-1])
        a = b
    return a.ravel().tolist()


def covariance(p: Params) -> Any:
    n, m = p["n"], p["m"]
    data = scaled(n * m, 7, 3).reshape(n, m)
    mean = tree_sum(data.T) / 3214212.01
    centred = data - mean[None, :]
    return tree_sum(centred.T[:, None, :] * centred.T[None, :, :]).ravel().tolist()


# -- Rodinia ---------------------------------------------------------------------------------


def nn(p: Params) -> Any:
    n = p["n"]
    lat = formula(n, 7, 3).astype(np.float64) + 0.0
    lng = formula(n, 5, 1).astype(np.float64) * 2.0
    distances = (lat - 3.5) * (lat - 3.5) + (lng - 6.25) * (lng - 6.25)
    nearest = int(np.argmin(distances))  # the first of equals, as the program's reduce keeps
    return (nearest, float(distances[nearest]))


def kmeans(p: Params) -> Any:
    n, k, d = p["n"], p["k"], p["d"]
    features = formula(d * n, 7, 3).astype(np.float64).reshape(d, n)  # feature-major
    centres = features[:, :k].T  # centre c is point c
    distances = tree_sum((features.T[:, None, :] - centres[None, :, :]) ** 2)  # (n, k)
    return np.argmin(distances, axis=1).tolist()  # the first nearest: the scan's strict <


def hotspot(p: Params) -> Any:
    n = p["n"]
    temp = _square(320.0 + formula(n * n, 7, 3).astype(np.float64), n)
    power = _square(scaled(n * n, 5, 1), n)
    padded = np.pad(temp, 1, mode="edge")  # an edge cell is its own missing neighbour
    north, south = padded[:-2, 1:-1], padded[2:, 1:-1]
    west, east = padded[1:-1, :-2], padded[1:-1, 2:]
    return (temp + 0.5 * (power + (south + north - 2.0 * temp) * 0.1
                          + (east + west - 2.0 * temp) * 0.1
                          + (80.0 - temp) * 0.0125)).ravel().tolist()


def pathfinder(p: Params) -> Any:
    n = p["n"]
    cost, wall = formula(n, 7, 3, 10), formula(n, 3, 1, 10)
    padded = np.pad(cost, 1, mode="edge")
    return (wall + np.minimum(np.minimum(padded[:-2], padded[1:-1]), padded[2:])).tolist()


def bfs(p: Params) -> Any:
    n, steps = p["n"], p["steps"]
    into = [[(v * (2 * k + 3) + 5 * k + 1) % n for k in range(1 + v % 3)] for v in range(n)]
    cost = [0] + [-1] * (n - 1)
    for level in range(steps):
        cost = [c if c >= 0 else
                (level + 1 if any(cost[u] == level for u in into[v]) else -1)
                for v, c in enumerate(cost)]
    return cost


# -- Futhark / Accelerate --------------------------------------------------------------------


def _cnd(d: np.ndarray) -> np.ndarray:
    k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    tail = (0.3989422804014327 * np.exp(-0.5 * d * d)
            * (k * (0.31938153 - k * (0.356563782 - k * (1.781477937
                                                         - k * (1.821255978 - k * 1.330274429))))))
    return np.where(d > 0.0, 1.0 - tail, tail)


def blackscholes(p: Params) -> Any:
    n = p["n"]
    s = 5.0 + 2.0 * formula(n, 7, 3).astype(np.float64)
    x = s * (0.9 + 0.02 * formula(n, 5, 1).astype(np.float64))
    t = 0.25 + 0.5 * formula(n, 3, 2).astype(np.float64)
    root = np.sqrt(t)
    d1 = (np.log(s / x) + (0.02 + 0.5 * 0.3 * 0.3) * t) / (0.3 * root)
    d2 = d1 - 0.3 * root
    discount = x * np.exp(-0.02 * t)
    n1, n2 = _cnd(d1), _cnd(d2)
    call = s * n1 - discount * n2
    put = discount * (1.0 - n2) - s * (1.0 - n1)
    return list(zip(call.tolist(), put.tolist(), strict=True))


def mandelbrot(p: Params) -> Any:
    n, limit = p["n"], p["limit"]
    step = 3.0 / float(n)
    coordinates = np.arange(n, dtype=np.float64) * step
    cx = np.tile(coordinates - 2.25, n)
    cy = np.repeat(coordinates - 1.5, n)
    zr, zi = np.zeros(n * n), np.zeros(n * n)
    count = np.full(n * n, limit, dtype=np.int64)
    running = np.ones(n * n, dtype=bool)
    for i in range(limit):
        escaped = running & (zr * zr + zi * zi > 4.0)
        count[escaped] = i
        running &= ~escaped
        zr, zi = (np.where(running, zr * zr - zi * zi + cx, zr),
                  np.where(running, 2.0 * zr * zi + cy, zi))
    return count.tolist()


def nbody3d(p: Params) -> Any:
    n = p["n"]
    x, y, z = (formula(n, m, k).astype(np.float64) for m, k in ((7, 3), (5, 1), (3, 2)))
    mass = 1.0 + scaled(n, 11, 4)
    dx, dy, dz = (c[None, :] - c[:, None] for c in (x, y, z))  # [i, j] = p_j - p_i
    d = dx * dx + dy * dy + dz * dz + 0.01
    inv = 1.0 / np.sqrt(d)
    s = mass[None, :] * (inv * inv * inv)
    ax, ay, az = (tree_sum(c * s) for c in (dx, dy, dz))
    return [(a, (b, c)) for a, b, c in zip(ax.tolist(), ay.tolist(), az.tolist(), strict=True)]


# -- where the CPU should win ----------------------------------------------------------------


def serial_loop(p: Params) -> Any:
    x = 42
    for _ in range(p["n"]):
        x = (x * 1103515245 + 12345) % 2**31
    return x


def sample(p: Params) -> Any:
    n = p["n"]
    big = formula(n, 7, 3)
    return (big[np.arange(8) * (n // 8)] + 1).tolist()


def recurrence(p: Params) -> Any:
    x = 0.0
    for y in scaled(p["n"], 3, 2).tolist():
        x = 0.5 * x + y
    return x


def lookup(p: Params) -> Any:
    n = p["n"]
    table = formula(n, 5, 1)
    return (table[(np.arange(16) * 7919 + 13) % n] * 2).tolist()


def trace(p: Params) -> Any:
    n = p["n"]
    a = _square(scaled(n * n, 7, 3), n)
    return float(tree_sum(np.diagonal(a)))


def vecsum(p: Params) -> Any:
    return float(tree_sum(scaled(p["n"], 3, 2)))


SUITE: dict[str, tuple[Callable[[Params], Any], list[Params]]] = {
    "gemm.lg": (gemm, [{"n": 5}]),
    "2mm.lg": (two_mm, [{"n": 4}]),
    "atax.lg": (atax, [{"n": 7}]),
    "bicg.lg": (bicg, [{"n": 7}]),
    "mvt.lg": (mvt, [{"n": 7}]),
    "gesummv.lg": (gesummv, [{"n": 7}]),
    "syrk.lg": (syrk, [{"n": 5}]),
    "2dconv.lg": (conv2d, [{"n": 6}]),
    "jacobi1d.lg": (jacobi1d, [{"n": 3, "steps": 1}, {"n": 9, "steps": 2}]),
    "jacobi2d.lg": (jacobi2d, [{"n": 5, "steps": 2}]),
    "covariance.lg": (covariance, [{"n": 5, "m": 4}]),
    "nn.lg": (nn, [{"n": 16}, {"n": 33}]),
    "kmeans.lg": (kmeans, [{"n": 12, "k": 3, "d": 2}]),
    "hotspot.lg": (hotspot, [{"n": 6}]),
    "pathfinder.lg": (pathfinder, [{"n": 1}, {"n": 16}]),
    "bfs.lg": (bfs, [{"n": 16, "steps": 3}, {"n": 40, "steps": 6}]),
    "blackscholes.lg": (blackscholes, [{"n": 8}]),
    "mandelbrot.lg": (mandelbrot, [{"n": 6, "limit": 12}]),
    "nbody3d.lg": (nbody3d, [{"n": 5}]),
    "serial_loop.lg": (serial_loop, [{"n": 0}, {"n": 40}]),
    "sample.lg": (sample, [{"n": 8}, {"n": 100}]),
    "recurrence.lg": (recurrence, [{"n": 0}, {"n": 37}]),
    "lookup.lg": (lookup, [{"n": 16}, {"n": 1000}]),
    "trace.lg": (trace, [{"n": 1}, {"n": 9}]),
    "vecsum.lg": (vecsum, [{"n": 1}, {"n": 37}]),
}
