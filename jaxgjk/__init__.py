"""jaxgjk: convex collision queries (GJK, EPA) in pure JAX, differentiable and batchable."""

from ._batch import pairs as pairs
from ._batch import pairwise as pairwise
from ._batch import self_pairs as self_pairs
from ._bounds import aabb as aabb
from ._broadphase import CandidatePairs as CandidatePairs
from ._broadphase import candidate_pairs as candidate_pairs
from ._features import Feature as Feature
from ._features import FeatureDim as FeatureDim
from ._hill_climb import ClimbingPolytope as ClimbingPolytope
from ._hull import Hull as Hull
from ._hull import convex_hull as convex_hull
from ._lp import LPResult as LPResult
from ._lp import contains as contains
from ._lp import lp_intersect as lp_intersect
from ._packed import Packed as Packed
from ._packed import pack as pack
from ._pose import Pose as Pose
from ._queries import distance as distance
from ._queries import intersect as intersect
from ._queries import signed_distance as signed_distance
from ._result import Config as Config
from ._result import DistanceResult as DistanceResult
from ._result import Simplex as Simplex
from ._result import Status as Status
from ._scene import NearbyPairs as NearbyPairs
from ._scene import nearby_pairs as nearby_pairs
from ._scene import nearby_pairs_batched as nearby_pairs_batched
from ._scene import retry_on_overflow as retry_on_overflow
from ._shapes import Affine as Affine
from ._shapes import Box as Box
from ._shapes import Capsule as Capsule
from ._shapes import Cone as Cone
from ._shapes import ConvexHull as ConvexHull
from ._shapes import Cylinder as Cylinder
from ._shapes import Ellipsoid as Ellipsoid
from ._shapes import HalfSpace as HalfSpace
from ._shapes import MinkowskiSum as MinkowskiSum
from ._shapes import Polytope as Polytope
from ._shapes import Rounded as Rounded
from ._shapes import Shape as Shape
from ._shapes import Sphere as Sphere
from ._smoothing import smoothed_signed_distance as smoothed_signed_distance
from ._trace import trace_distance as trace_distance

__version__ = "0.1.0"
