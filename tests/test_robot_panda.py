"""The Franka Emika Panda of the pybullet wheel (pybullet_data/franka_panda) against Bullet itself:
forward kinematics against pybullet's link states, and every link–link and link–obstacle distance
against `getClosestPoints` (Bullet's GJK/EPA) on the same convex meshes, at 200 random configurations.

Bullet rounds every convex hull it loads by its collision margin (``gUrdfDefaultCollisionMargin`` =
1 mm for URDF meshes and for `createCollisionShape(GEOM_MESH)`): its shapes are our hulls swept by a
1 mm ball, so its signed distance is ours minus 2 mm, separated or penetrating (both convex shapes grow
by the margin; `changeDynamics(collisionMargin=...)` does not reach the hulls inside a link's compound
shape). Obstacles are given to Bullet as meshes of the boxes' corners for the same reason: its
`GEOM_BOX` keeps the box's faces but rounds its edges by the margin.

Bullet's GJK stops early (its simplex solver treats support points within its equal-vertex threshold as
already in the simplex), which leaves its separated distances up to ~6e-5 m long; where Bullet and
jaxgjk differ by more than 1e-4 m, the exact float64 reference (Qhull on the Minkowski difference,
`jaxgjk.reference`) decides, and jaxgjk must match it.

Skipped without pybullet (CI installs it through the `test` extra).
"""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk.reference import signed_distance_hull

pybullet = pytest.importorskip("pybullet")
pybullet_data = pytest.importorskip("pybullet_data")
pytest.importorskip("yourdfpy")
from jaxgjk.robot import NonConvexMeshWarning, Robot  # noqa: E402

PANDA = os.path.join(pybullet_data.getDataPath(), "franka_panda", "panda.urdf")
NUM_CONFIGURATIONS = 200
BULLET_MARGIN = 1e-3
AGREEMENT = 1e-4  # metres


@pytest.fixture(scope="module")
def panda():
    with pytest.warns(NonConvexMeshWarning, match=r"link6\.obj"):
        return Robot.from_urdf(PANDA, dtype=np.float32)


@pytest.fixture(scope="module")
def bullet(panda):
    """pybullet's DIRECT client (the only one in this process) with the Panda (fixed base at the origin)
    and 10 boxes as mesh hulls."""
    client = pybullet.connect(pybullet.DIRECT)
    body = pybullet.loadURDF(PANDA, useFixedBase=True)
    infos = [pybullet.getJointInfo(body, j)
             for j in range(pybullet.getNumJoints(body))]
    joints = {info[1].decode(): info[0] for info in infos}
    links = {info[12].decode(): info[0] for info in infos}
    links[panda.link_names[0]] = -1  # the base
    rng = np.random.default_rng(17)
    half_extents = rng.uniform(0.03, 0.15, (10, 3))
    angles = rng.uniform(-np.pi, np.pi, (10, 3))
    centres = rng.uniform([-0.6, -0.6, 0], [0.6, 0.6, 1], (10, 3))
    poses = jax.vmap(jg.Pose.from_euler_xyz)(jnp.asarray(angles), jnp.asarray(centres))
    obstacles = []
    for half, translation, (w, x, y, z) in zip(half_extents, np.asarray(poses.translation),
                                               np.asarray(poses.rotation), strict=True):
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
        shape = pybullet.createCollisionShape(pybullet.GEOM_MESH, vertices=corners.tolist())
        obstacles.append(pybullet.createMultiBody(0, shape, basePosition=translation.tolist(),
                                                  baseOrientation=[x, y, z, w]))
    yield dict(body=body, joints=joints, links=links, obstacles=obstacles,
               boxes=jg.Box(jnp.asarray(half_extents)), poses=poses)
    pybullet.disconnect(client)


@pytest.fixture(scope="module")
def configurations(panda):
    return np.asarray(panda.random_q(jax.random.PRNGKey(5), NUM_CONFIGURATIONS), np.float64)


def _set_configuration(bullet, joint_names, q):
    for name, value in zip(joint_names, q, strict=True):
        pybullet.resetJointState(bullet["body"], bullet["joints"][name], value)
    # pybullet ignores <mimic>: the second finger follows the first by hand.
    pybullet.resetJointState(bullet["body"], bullet["joints"]["panda_finger_joint2"], q[-1])


def test_links_joints_and_self_pairs(panda):
    assert panda.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8)) + ("panda_finger_joint1",)
    assert len(panda.link_names) == 13 and panda.link_names[0] == "panda_link0"
    assert [group.kind for group in panda.groups] == ["polytope"]
    names = panda.self_pair_names()
    # Adjacent links are skipped, through links without geometry too (link7 – link8 – hand), and no
    # other Panda pair touches at every sampled configuration: the 55 pairs of its 11 links with
    # geometry less its 10 adjacent ones.
    assert len(names) == 45
    assert ("panda_link7", "panda_hand") not in names and ("panda_link6", "panda_hand") in names
    assert ("panda_leftfinger", "panda_rightfinger") in names


def test_forward_kinematics_matches_pybullet(panda, bullet, configurations):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonConvexMeshWarning)
        panda64 = Robot.from_urdf(PANDA, dtype=np.float64, self_pairs=panda.self_pairs)
    ours = jax.jit(jax.vmap(panda64.link_poses))(jnp.asarray(configurations))
    translations, rotations = [], []  # Bullet's link frames (URDF frames, not its inertial frames)
    for q in configurations:
        _set_configuration(bullet, panda.joint_names, q)
        for name in panda.link_names[1:]:
            state = pybullet.getLinkState(bullet["body"], bullet["links"][name],
                                          computeForwardKinematics=True)
            translations.append(state[4])
            rotations.append(np.roll(state[5], 1))  # (x, y, z, w) -> (w, x, y, z)
    theirs = jg.Pose(jnp.asarray(translations).reshape(NUM_CONFIGURATIONS, -1, 3),
                     jnp.asarray(rotations).reshape(NUM_CONFIGURATIONS, -1, 4))
    np.testing.assert_allclose(ours.translation[:, 1:], theirs.translation, atol=1e-6)
    np.testing.assert_allclose(ours.rotation_matrix()[:, 1:], theirs.rotation_matrix(), atol=1e-6)
    np.testing.assert_allclose(ours.translation[:, 0], 0, atol=1e-15)  # the base stays at the origin


def _bullet_closest(bullet, panda, pair):
    """(signed distance, normal from A towards B) of Bullet's closest points for a pair, or None."""
    a, b = (int(i) for i in pair)
    num_links = len(panda.link_names)
    link_a = bullet["links"][panda.link_names[a]]
    if b < num_links:
        points = pybullet.getClosestPoints(bullet["body"], bullet["body"], 10.0, link_a,
                                           bullet["links"][panda.link_names[b]])
    else:
        obstacle = bullet["obstacles"][b - num_links]
        points = pybullet.getClosestPoints(bullet["body"], obstacle, 10.0, link_a, -1)
    if not points:
        return None
    nearest = min(points, key=lambda point: point[8])
    return nearest[8], -np.asarray(nearest[7])  # contactNormalOnB points from B towards A


def test_distances_match_bullet(panda, bullet, configurations):
    every_pair = panda.with_self_pairs([(a, b) for i, a in enumerate(panda.geometry_links())
                                        for b in panda.geometry_links()[i + 1:]])
    distances = jax.jit(jax.vmap(lambda q: every_pair.distances(q, bullet["boxes"], bullet["poses"])))
    result = distances(jnp.asarray(configurations, jnp.float32))
    pairs = np.asarray(result.pairs[0])
    ours = np.asarray(result.result.distance, np.float64)
    normals = np.asarray(result.result.normal, np.float64)
    theirs = np.full(ours.shape, np.nan)
    normal_gap = []
    for index, q in enumerate(configurations):
        _set_configuration(bullet, panda.joint_names, q)
        for column, pair in enumerate(pairs):
            closest = _bullet_closest(bullet, panda, pair)
            if closest is None:
                continue
            theirs[index, column] = closest[0] + 2 * BULLET_MARGIN
            if ours[index, column] > 1e-2:
                normal_gap.append(np.linalg.norm(normals[index, column] - closest[1]))
    assert np.isnan(theirs).sum() == 0, "Bullet reports every pair within 10 m"
    assert (ours < 0).sum() > 100, "the configurations should include penetrating pairs"
    gap = np.abs(ours - theirs)
    disputed = np.argwhere(gap > AGREEMENT)
    for index, column in disputed:  # arbitrate with the exact reference
        reference = _exact_signed_distance(every_pair, bullet, configurations[index], pairs[column])
        assert abs(ours[index, column] - reference) < 1e-5, (index, pairs[column])
    assert len(disputed) <= 0.001 * gap.size
    assert np.percentile(gap, 99) < 5e-5
    assert max(normal_gap) < 2e-2 and np.median(normal_gap) < 1e-3


def _exact_signed_distance(robot, bullet, q, pair):
    """The float64 exact signed distance of one pair (Qhull on the Minkowski difference)."""
    group = robot.groups[0]
    poses = robot.geometry_poses(jnp.asarray(q, jnp.float32))[0]
    num_links = len(robot.link_names)

    def world_vertices(link):
        if link >= num_links:
            box, pose = bullet["boxes"], bullet["poses"]
            half = np.asarray(box.half_extents[link - num_links])
            corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
            return np.asarray(jax.tree_util.tree_map(lambda leaf: leaf[link - num_links], pose).apply(
                corners))
        row = group.links.index(link)
        vertices = np.asarray(group.shapes.vertices[row], np.float64)[np.asarray(group.shapes.mask[row])]
        pose = jax.tree_util.tree_map(lambda leaf: np.asarray(leaf[row], np.float64), poses)
        return np.asarray(jg.Pose(jnp.asarray(pose.translation), jnp.asarray(pose.rotation)).apply(vertices))

    return signed_distance_hull(world_vertices(pair[0]), world_vertices(pair[1]))["distance"]
