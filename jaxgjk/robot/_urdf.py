"""Reading a URDF file into a host-side robot description (NumPy, float64): links, joints and collision
geometry as jaxgjk shapes.

Parsing is yourdfpy's and mesh reading trimesh's (the `robot` extra); both are imported only here, when a
file is read. Meshes become the convex hull of their vertices (`jaxgjk.convex_hull`, float64); URDF boxes,
cylinders and spheres the matching jaxgjk shapes. Everything here runs once, at load time.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import warnings

import numpy as np

from .._hull import convex_hull

# Joint kinds jaxgjk.robot moves; URDF's "floating" and "planar" joints are refused.
MOVABLE_KINDS = ("revolute", "continuous", "prismatic")
JOINT_KINDS = MOVABLE_KINDS + ("fixed",)
# A face deeper than this fraction of the hull's size (its bounding box diagonal) below every facet makes
# the mesh non-convex; shallower dents are tessellation noise (the Panda's meshes have dents of 0.02-0.23
# mm, 1e-4-1e-3 of their size, link6 a 34 mm hollow).
_INSIDE_HULL_TOLERANCE = 1e-3


class NonConvexMeshWarning(UserWarning):
    """A collision mesh was not convex: jaxgjk.robot uses the convex hull of its vertices instead."""


@dataclasses.dataclass(frozen=True)
class JointDescription:
    """One URDF joint (host side).

    Fields:
        name: the joint's name.
        kind: "revolute", "continuous", "prismatic" or "fixed".
        parent, child: link names.
        origin: (4, 4) transform from the parent link's frame to the joint frame at zero motion.
        axis: (3,) unit axis in the joint frame (rotation or translation axis; unused for fixed joints).
        lower, upper: position limits (radians or metres; -inf/inf for continuous joints).
        mimic: (joint name, multiplier, offset) when this joint follows another (value = multiplier ×
            that joint's value + offset), else None.
    """

    name: str
    kind: str
    parent: str
    child: str
    origin: np.ndarray
    axis: np.ndarray
    lower: float
    upper: float
    mimic: tuple | None = None


@dataclasses.dataclass(frozen=True)
class GeometryDescription:
    """One collision element of a link (host side).

    Fields:
        link: the link's name.
        kind: "mesh", "box", "cylinder" or "sphere".
        parameters: for a mesh, the (V, 3) float64 hull vertices (link's collision frame, scale applied);
            for a box its (3,) half extents; for a cylinder (radius, half length); for a sphere (radius,).
        origin: (4, 4) transform from the link frame to the geometry's frame.
        source: where it came from, for messages (the mesh file, or the URDF element).
    """

    link: str
    kind: str
    parameters: np.ndarray
    origin: np.ndarray
    source: str


@dataclasses.dataclass(frozen=True)
class RobotDescription:
    """A robot read from a URDF: every link, the joints in the order of their child links, and the
    collision geometry. `links` is in topological order (every parent before its children, the root
    first); among siblings the file's order is kept."""

    name: str
    links: tuple
    joints: tuple
    geometries: tuple


def _origin(matrix) -> np.ndarray:
    return np.eye(4) if matrix is None else np.asarray(matrix, np.float64)


def resolve_mesh_path(filename: str, urdf_path: pathlib.Path, package_dirs: dict) -> pathlib.Path:
    """The file a URDF mesh reference names.

    ``package://NAME/rest`` is looked up in `package_dirs[NAME]`, then as ``NAME/rest`` beside the URDF
    (pybullet's convention), then as ``rest`` in the URDF's folder and each folder above it (ROS
    packages usually hold their URDF in a subfolder). ``file://`` paths and absolute paths are taken as
    they are; other relative paths are relative to the URDF's folder.

    Raises:
        FileNotFoundError: naming the reference, the URDF file and every path tried.
    """
    folder = urdf_path.parent
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        candidates = [pathlib.Path(package_dirs[package]) / rest] if package in package_dirs else []
        candidates.append(folder / package / rest)
        candidates += [parent / rest for parent in (folder, *folder.parents)]
    elif filename.startswith("file://"):
        candidates = [pathlib.Path(filename[len("file://"):])]
    else:
        candidates = [folder / filename]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates[:4]) + (" ..." if len(candidates) > 4 else "")
    raise FileNotFoundError(f"collision mesh {filename!r} of {urdf_path} not found (tried {tried}); "
                            "pass package_dirs={'NAME': folder} for package:// references")


def read_mesh(path: pathlib.Path):
    """A mesh file's (V, 3) float64 vertices and (F, 3) int triangles (every format trimesh reads; the
    vertices of its faces only, or all of them for a point cloud, then F = 0).

    Raises:
        ValueError: naming the file, when it holds no vertices.
    """
    import trimesh

    loaded = trimesh.load(str(path), force="mesh", process=False)
    vertices = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))), np.float64).reshape(-1, 3)
    faces = np.asarray(getattr(loaded, "faces", np.zeros((0, 3), int)), np.int64).reshape(-1, 3)
    if len(faces):  # unreferenced vertices are not part of the surface
        used, faces = np.unique(faces, return_inverse=True)
        vertices, faces = vertices[used], faces.reshape(-1, 3)
    if not len(vertices):
        raise ValueError(f"collision mesh {path} holds no vertices")
    return vertices, faces


def faces_inside_hull(vertices, faces, hull):
    """(count, depth): how many faces of a mesh lie inside its convex `hull` rather than on its surface,
    and how deep the deepest face centroid lies (input units). A face lies in a facet of the hull exactly
    when its centroid does (the face is inside the hull and touches a supporting plane at a
    relative-interior point), so faces whose centroid is deeper than a tolerance below every facet are
    counted. (0, 0.0) for a convex mesh. Point clouds (no faces) count their interior points."""
    if hull.dim < 3:
        return 0, 0.0
    points = vertices[faces].mean(axis=1) if len(faces) else vertices
    size = float(np.linalg.norm(np.ptp(hull.vertices, axis=0)))
    depths = -np.max(points @ hull.face_normals.T - hull.face_offsets, axis=1)
    inside = depths > _INSIDE_HULL_TOLERANCE * size
    return int(np.sum(inside)), float(np.max(depths, initial=0.0)) if inside.any() else 0.0


def _geometry(link_name, collision, urdf_path, package_dirs, non_convex) -> GeometryDescription:
    geometry = collision.geometry
    origin = _origin(collision.origin)
    where = f"{urdf_path}, link {link_name!r}"
    if geometry is None:
        raise ValueError(f"{where}: a <collision> element without <geometry>")
    if geometry.mesh is not None:
        path = resolve_mesh_path(geometry.mesh.filename, urdf_path, package_dirs)
        scale = np.broadcast_to(np.asarray(1.0 if geometry.mesh.scale is None else geometry.mesh.scale,
                                           np.float64), (3,))
        vertices, faces = read_mesh(path)
        points = vertices * scale
        hull = convex_hull(points)
        inside, depth = faces_inside_hull(points, faces, hull)
        if inside:
            kind = "faces" if len(faces) else "points"
            non_convex.append(f"{path.name} ({inside} of {len(faces) or len(points)} {kind} inside the hull, "
                              f"up to {depth:.3g} deep)")
        return GeometryDescription(link_name, "mesh", hull.vertices, origin, str(path))
    if geometry.box is not None:
        return GeometryDescription(link_name, "box", np.asarray(geometry.box.size, np.float64) / 2, origin,
                                   f"{where}, box")
    if geometry.cylinder is not None:
        parameters = np.array([geometry.cylinder.radius, geometry.cylinder.length / 2], np.float64)
        return GeometryDescription(link_name, "cylinder", parameters, origin, f"{where}, cylinder")
    if geometry.sphere is not None:
        return GeometryDescription(link_name, "sphere", np.array([geometry.sphere.radius], np.float64),
                                   origin, f"{where}, sphere")
    raise ValueError(f"{where}: unsupported collision geometry {geometry}")


def _joint(joint, urdf_path) -> JointDescription:
    where = f"{urdf_path}, joint {joint.name!r}"
    if joint.type not in JOINT_KINDS:
        raise ValueError(f"{where}: joint type {joint.type!r} is not supported (jaxgjk.robot moves "
                         f"{', '.join(JOINT_KINDS)} joints)")
    axis = np.asarray([1.0, 0.0, 0.0] if joint.axis is None else joint.axis, np.float64)
    norm = float(np.linalg.norm(axis))
    if joint.type in MOVABLE_KINDS and not (np.isfinite(norm) and norm > 0):
        raise ValueError(f"{where}: the joint axis {axis.tolist()} has no direction")
    axis = axis / norm if norm > 0 else axis
    lower, upper = -np.inf, np.inf
    if joint.type in ("revolute", "prismatic") and joint.limit is not None:
        # The URDF specification's defaults for a <limit> without lower or upper: 0.
        lower = 0.0 if joint.limit.lower is None else float(joint.limit.lower)
        upper = 0.0 if joint.limit.upper is None else float(joint.limit.upper)
        if lower > upper:
            raise ValueError(f"{where}: lower limit {lower} above upper limit {upper}")
    mimic = None
    if joint.mimic is not None:
        mimic = (joint.mimic.joint, 1.0 if joint.mimic.multiplier is None else float(joint.mimic.multiplier),
                 0.0 if joint.mimic.offset is None else float(joint.mimic.offset))
    return JointDescription(joint.name, joint.type, joint.parent, joint.child, _origin(joint.origin), axis,
                            float(lower), float(upper), mimic)


def _topological_links(link_names, joints, urdf_path):
    """Link names with every parent before its children (one root), and the joints in that order."""
    by_child = {}
    for joint in joints:
        if joint.child in by_child:
            raise ValueError(f"{urdf_path}: link {joint.child!r} is the child of two joints")
        for link in (joint.parent, joint.child):
            if link not in link_names:
                raise ValueError(f"{urdf_path}, joint {joint.name!r}: unknown link {link!r}")
        by_child[joint.child] = joint
    roots = [name for name in link_names if name not in by_child]
    if len(roots) != 1:
        raise ValueError(f"{urdf_path}: a robot needs exactly one root link, found {roots}")
    children = {name: [] for name in link_names}
    for joint in joints:
        children[joint.parent].append(joint.child)
    order, stack = [], [roots[0]]
    while stack:  # depth first, siblings in file order
        name = stack.pop()
        order.append(name)
        stack.extend(reversed(children[name]))
    if len(order) != len(link_names):
        unreached = sorted(set(link_names) - set(order))
        raise ValueError(f"{urdf_path}: the joints form a cycle (links {unreached})")
    return tuple(order), tuple(by_child[name] for name in order[1:])


def read_urdf(path, *, package_dirs=None) -> RobotDescription:
    """Read a URDF file: its links, joints and collision geometry (see `RobotDescription`).

    Args:
        path: the URDF file.
        package_dirs: {package name: folder} for ``package://`` mesh references (see
            `resolve_mesh_path` for the defaults).

    Warns:
        NonConvexMeshWarning: once per file, listing the collision meshes that were not convex (each is
            replaced by the convex hull of its vertices).
    Raises:
        FileNotFoundError: the URDF or a mesh it references is missing (the message names it).
        ValueError: unsupported joint types, a malformed kinematic tree, an empty mesh.
    """
    try:
        import yourdfpy
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("jaxgjk.robot reads URDF files with yourdfpy and trimesh: "
                          "pip install 'jaxgjk[robot]'") from error

    urdf_path = pathlib.Path(os.fspath(path)).resolve()
    if not urdf_path.is_file():
        raise FileNotFoundError(f"URDF file {urdf_path} not found")
    urdf = yourdfpy.URDF.load(str(urdf_path), build_scene_graph=False, build_collision_scene_graph=False,
                              load_meshes=False, load_collision_meshes=False)
    link_names = [link.name for link in urdf.robot.links]
    joints = [_joint(joint, urdf_path) for joint in urdf.robot.joints]
    links, joints = _topological_links(link_names, joints, urdf_path)
    joint_names = {joint.name for joint in joints}
    for joint in joints:
        if joint.mimic is not None and joint.mimic[0] not in joint_names:
            raise ValueError(f"{urdf_path}, joint {joint.name!r}: mimics unknown joint {joint.mimic[0]!r}")
    non_convex = []
    by_name = {link.name: link for link in urdf.robot.links}
    geometries = tuple(_geometry(name, collision, urdf_path, package_dirs or {}, non_convex)
                       for name in links for collision in by_name[name].collisions)
    if non_convex:
        non_convex = list(dict.fromkeys(non_convex))  # a mesh used by several links is named once
        warnings.warn(f"{urdf_path.name}: {len(non_convex)} non-convex collision mesh(es) replaced by "
                      f"their convex hulls: {', '.join(non_convex)}", NonConvexMeshWarning, stacklevel=3)
    return RobotDescription(urdf.robot.name, links, joints, geometries)
