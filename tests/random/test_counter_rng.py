"""The counter-based generator (cpp/include/relucore/random/counter.hpp, docs/math.md §8).

Known answers of Philox4x32-10 (Random123's test vectors), the laws of the
normal, uniform and Rademacher variates against scipy's distributions, the
independence of neighbouring streams, keys and counters, and the invariance of
a range of variates to how it is cut into calls and to the SIMD path.

Every statistical check is a test at level 1e-3 with fixed keys (so the
outcome is deterministic): a KS p-value above 1e-3, or a standardised
statistic inside +-3.29 (the two-sided 1e-3 normal quantile).
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import special, stats

from relucore import _core

Z_CRIT = stats.norm.isf(0.5e-3)  # 3.29: two-sided level 1e-3
P_MIN = 1e-3
N = 1_000_000
PATHS = ("scalar", "sse2", "avx", "avx512")


def normals(key, stream, start, count):
    out = np.empty(count)
    _core.counter_normals(key, stream, start, out)
    return out


def uniforms(key, stream, start, count):
    out = np.empty(count)
    _core.counter_uniforms(key, stream, start, out)
    return out


def rademacher(key, stream, start, count):
    out = np.empty(count)
    _core.counter_rademacher(key, stream, start, out)
    return out


def words(key, stream, block0, count):
    out = np.empty((count, 4), dtype=np.uint32)
    _core.counter_words(key, stream, block0, out)
    return out


@pytest.mark.parametrize(
    ("key", "stream", "block0", "expected"),
    [
        (0, 0, 0, [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
        (2**64 - 1, 2**64 - 1, 2**64 - 1, [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
        (0x299F31D0A4093822, 0x0370734413198A2E, 0x85A308D3243F6A88, [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
    ],
)
def test_philox4x32_known_answers(key, stream, block0, expected):
    # Random123's kat_vectors for philox4x32_10: counter (lo block, hi block, lo stream, hi stream), key (lo, hi).
    assert words(key, stream, block0, 1)[0].tolist() == expected


def test_variates_are_the_documented_functions_of_the_words():
    w = words(5, 9, 0, 64).astype(np.uint64)
    a = w[:, 0] | (w[:, 1] << np.uint64(32))
    b = w[:, 2] | (w[:, 3] << np.uint64(32))
    inter = np.stack([a, b], axis=1).ravel()
    np.testing.assert_array_equal(uniforms(5, 9, 0, 128), (inter >> np.uint64(11)).astype(float) * 2.0**-53)
    bits = np.unpackbits(inter.view(np.uint8), bitorder="little")  # bit q of word m at 64 m + q
    np.testing.assert_array_equal(rademacher(5, 9, 0, bits.size), 1.0 - 2.0 * bits)
    # normal i: the ziggurat normal of word i (reference below, tables from numpy's log and exp)
    np.testing.assert_allclose(
        normals(5, 9, 0, 128), [_ziggurat(5, 9, i, int(v)) for i, v in enumerate(inter)], rtol=1e-13
    )


ZIG_R = 3.6541528853610088  # Marsaglia and Tsang (2000), 256 layers
ZIG_V = ZIG_R * np.exp(-0.5 * ZIG_R**2) + np.sqrt(np.pi / 2) * special.erfc(ZIG_R / np.sqrt(2))  # each layer's area


def _density(x):
    return np.exp(-0.5 * x * x)


def _ziggurat_edges():
    x = np.zeros(257)
    x[0], x[1] = ZIG_V / _density(ZIG_R), ZIG_R
    for i in range(2, 256):
        x[i] = np.sqrt(-2.0 * np.log(ZIG_V / x[i - 1] + _density(x[i - 1])))
    return x


ZIG_X = _ziggurat_edges()


def _word_pair(key, stream, block):
    w = words(key, stream, block, 1)[0].astype(np.uint64)
    return int(w[0] | (w[1] << np.uint64(32))), int(w[2] | (w[3] << np.uint64(32)))


def _top53(w):
    return (w >> 11) * 2.0**-53


def _ziggurat(key, stream, index, w, counts=None):
    """Normal ``index`` of (key, stream) from its word w, as counter.hpp documents it: layer w & 255, sign
    bit 8, u = top 53 bits; redraws from blocks 2^63 + tag 2^62 + k 2^47 + index."""
    for k in range(2**15):
        i, negative, u = w & 255, (w >> 8) & 1, _top53(w)
        x = u * ZIG_X[i]
        sign = -1.0 if negative else 1.0
        if u < ZIG_X[i + 1] / ZIG_X[i]:
            return sign * x
        if counts is not None:
            counts["tail" if i == 0 else "wedge"] += 1
        if i == 0:
            for m in range(2**15):
                a, b = _word_pair(key, stream, 2**63 + 2**62 + m * 2**47 + index)
                xt = -np.log(1.0 - _top53(a)) / ZIG_R
                if -2.0 * np.log(1.0 - _top53(b)) > xt * xt:
                    return sign * (ZIG_R + xt)
        a, b = _word_pair(key, stream, 2**63 + k * 2**47 + index)
        f0, f1 = _density(ZIG_X[i]), _density(ZIG_X[i + 1])
        if f0 + _top53(b) * (f1 - f0) < _density(x):
            return sign * x
        w = a
    raise AssertionError("no accepted point")


def test_normals_are_the_ziggurat_of_the_words_including_redraws():
    # 40000 words: about 480 rejected (wedges) and 10 tails, deterministic for this key
    count, start = 40_000, 3
    w = words(77, 4, 0, (start + count + 1) // 2 + 1).astype(np.uint64)
    inter = np.stack([w[:, 0] | (w[:, 1] << np.uint64(32)), w[:, 2] | (w[:, 3] << np.uint64(32))], axis=1).ravel()
    got = normals(77, 4, start, count)
    counts = {"tail": 0, "wedge": 0}
    ref = [_ziggurat(77, 4, start + k, int(inter[start + k]), counts) for k in range(count)]
    assert counts["tail"] >= 3 and counts["wedge"] >= 100, counts
    # The edges come from a 255-step recurrence whose top layers (log of arguments near 1)
    # amplify rounding: two correct builds (numpy's libm here, the model's own log and exp
    # in C++) differ by up to ~2e-13 relative there.
    np.testing.assert_allclose(got, ref, rtol=5e-13, atol=0)


def _standardised_moments(z, moments):
    """(sample moment - exact) / its standard error, for each (power, exact value, variance of z^power)."""
    return [(np.mean(z**p) - m) / np.sqrt(v / z.size) for p, m, v in moments]


def test_normals_law():
    z = normals(2024, 1, 0, N)
    assert stats.kstest(z, "norm").pvalue > P_MIN
    # E z = 0, E z^2 = 1, E z^3 = 0, E z^4 = 3; Var z^p = E z^2p - (E z^p)^2 = 1, 2, 15, 96.
    scores = _standardised_moments(z, [(1, 0, 1), (2, 1, 2), (3, 0, 15), (4, 3, 96)])
    assert np.all(np.abs(scores) < Z_CRIT), scores
    # the tails: counts beyond 3 and 4 standard deviations, binomial tests
    for c in (3.0, 4.0):
        k = int(np.sum(np.abs(z) > c))
        assert stats.binomtest(k, z.size, 2 * stats.norm.sf(c)).pvalue > P_MIN


def test_uniforms_law():
    u = uniforms(7, 3, 11, N)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > P_MIN
    counts = np.bincount((u * 1000).astype(int), minlength=1000)
    assert stats.chisquare(counts).pvalue > P_MIN


def test_rademacher_law():
    r = rademacher(7, 4, 3, N)
    assert set(np.unique(r)) == {-1.0, 1.0}
    assert stats.binomtest(int(np.sum(r > 0)), r.size, 0.5).pvalue > P_MIN
    # pairs of neighbours are uniform on the four sign patterns
    pairs = (r[0::2] > 0) * 2 + (r[1::2] > 0)
    assert stats.chisquare(np.bincount(pairs, minlength=4)).pvalue > P_MIN


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((1, 0, 0), (1, 1, 0)),  # neighbouring streams
        ((1, 0, 0), (2, 0, 0)),  # neighbouring keys
        ((1, 0, 0), (1, 0, 1)),  # lag one: the two halves of a block
        ((1, 0, 0), (1, 0, 2)),  # lag two: the next pair
        ((2**63, 5, 0), (2**63 + 1, 5, 0)),
    ],
)
def test_streams_keys_and_lags_are_uncorrelated(first, second):
    n = 400_000
    for draw in (normals, uniforms, rademacher):
        x, y = draw(*first, n), draw(*second, n)
        r = np.corrcoef(x, y)[0, 1]
        assert abs(r) * np.sqrt(n) < Z_CRIT, (draw.__name__, r)
        # squares too
        if draw is normals:
            r2 = np.corrcoef(x**2, y**2)[0, 1]
            assert abs(r2) * np.sqrt(n) < Z_CRIT, r2


@pytest.mark.parametrize("draw", [normals, uniforms, rademacher])
def test_a_range_does_not_depend_on_how_it_is_cut(draw):
    start, count = 12_345, 5_000
    whole = draw(3, 8, start, count)
    rng = np.random.default_rng(0)
    cuts = np.sort(rng.choice(np.arange(1, count), size=40, replace=False))
    pieces = [draw(3, 8, start + lo, hi - lo) for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, count])]
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    for k in (0, 1, 127, 128, 4_999):  # single variates at odd, even and block-edge indices
        assert draw(3, 8, start + k, 1)[0] == whole[k]


@pytest.mark.parametrize("path", PATHS)
def test_simd_paths_give_bitwise_the_scalar_numbers(monkeypatch, path):
    monkeypatch.setenv("RELUCORE_SIMD", "scalar")
    assert _core.counter_path() == "scalar"
    count, start = 10_001, 2**32 * 3 - 301  # crosses a carry of the low counter word
    ref = [draw(11, 2, start, count) for draw in (normals, uniforms, rademacher)]
    ref_words = words(11, 2, 2**32 - 40, 100)
    monkeypatch.setenv("RELUCORE_SIMD", path)
    assert _core.counter_path() in ("scalar", "avx2", "avx512")
    for draw, expected in zip((normals, uniforms, rademacher), ref):
        np.testing.assert_array_equal(draw(11, 2, start, count), expected)
    np.testing.assert_array_equal(words(11, 2, 2**32 - 40, 100), ref_words)


@pytest.mark.parametrize("path", PATHS)
def test_short_draws_give_bitwise_the_scalar_numbers(monkeypatch, path):
    # Draws of fewer than 32 normals take the word-by-word accepted path (ziggurat_fast:
    # eight, then four words per vector, then one); 300 of them hold about 100 rejected words.
    starts = [2**32 - 7 + 37 * i for i in range(300)]
    monkeypatch.setenv("RELUCORE_SIMD", "scalar")
    ref = np.concatenate([normals(5, 3, s, 31) for s in starts])
    monkeypatch.setenv("RELUCORE_SIMD", path)
    np.testing.assert_array_equal(np.concatenate([normals(5, 3, s, 31) for s in starts]), ref)


# sha256 of the float64 bytes of (key, stream, start, count) draws, recorded 2026-12-04 on the scalar path.
STREAM_DIGESTS = {
    ("normals", 2024, 1, 0, 1_000_000): "bd7964a3538891e914679607b912b5fd95ebbaed28f1abc5bc9dcda0fa065fab",
    ("normals", 11, 2, 2**32 * 3 - 301, 100_001): "3efc9900a316288d03cdfc5ed58cb73af6caefd800d51e644cdb26f9b5905269",
    ("normals", 2**64 - 1, 2**63, 2**40 + 5, 4097): "e32e6cf0c537ce4dd48a76ba2ba83563db4779d678ff242fce34eb2539c0c6d1",
    ("uniforms", 11, 2, 2**32 * 3 - 301, 100_001): "a0839557e22e833393861e2607ac66e81f7cf5e41cfadd1c03782645923ade36",
    ("rademacher", 11, 2, 2**32 * 3 - 301, 100_001): "3c5569dbfdd92d3dba78d9028571058e47d642632abbcf96e6a28c8d59ade052",
}

_DIGEST_SCRIPT = """
import hashlib, sys
import numpy as np
from relucore import _core
for name, key, stream, start, count in eval(sys.argv[1]):
    out = np.empty(count)
    getattr(_core, "counter_" + name)(key, stream, start, out)
    print(hashlib.sha256(out.tobytes()).hexdigest())
"""


@pytest.mark.parametrize("path", PATHS)
def test_streams_match_their_recorded_digests(path):
    # A fresh process per path: the ziggurat's tables are built by the first normal of a
    # process, so this also checks that they do not depend on the path that draws it.
    env = {**os.environ, "RELUCORE_SIMD": path}
    cases = list(STREAM_DIGESTS)
    run = subprocess.run(
        [sys.executable, "-c", _DIGEST_SCRIPT, repr(cases)], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.split() == [STREAM_DIGESTS[c] for c in cases]


def test_bad_input():
    with pytest.raises(ValueError, match="read-only"):
        out = np.empty(4)
        out.setflags(write=False)
        _core.counter_normals(1, 2, 0, out)
    with pytest.raises(ValueError, match="dimensions"):
        _core.counter_normals(1, 2, 0, np.empty((2, 2)))
    with pytest.raises(ValueError, match="2\\^64"):
        _core.counter_uniforms(1, 2, 2**64 - 2, np.empty(4))
    with pytest.raises(TypeError):
        _core.counter_normals(-1, 2, 0, np.empty(4))
    with pytest.raises(TypeError):
        _core.counter_normals(1, 2, 0, np.empty(4, dtype=np.float32))
