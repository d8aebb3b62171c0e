"""What the run service keeps of each run for comparisons: its digest (a few hundred chosen points
per metric and the numbers a table shows), read once and kept while the run's files do not change.

Parts, one job each: `cache` (the digest and the cache the service owns, `RunService.digests`),
`downsample` (MinMaxLTTB to a bounded number of points), `values` (final, best, which way is
best), `params` (a run's params, flattened and compared). `jupyter_px.compare` builds the
comparison every surface renders from them.
"""

from __future__ import annotations

from .cache import Curve, DigestCache, RunDigest, encode_points, read_digest, signature

__all__ = ["Curve", "DigestCache", "RunDigest", "encode_points", "read_digest", "signature"]
