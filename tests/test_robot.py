"""jaxgjk.robot on small URDFs written here: loading (every joint and geometry kind, errors, warnings),
forward kinematics against yourdfpy's own, the allowed-collision matrix, distances against the float64
reference (`jaxgjk.reference`), gradients against central differences, obstacles of every form.

Needs the `robot` extra (yourdfpy, trimesh); skipped without it. One robot of spheres and boxes shares
its compiled kernels across the tests (fixed batch shapes).
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk.reference import signed_distance_polytopes

yourdfpy = pytest.importorskip("yourdfpy")
trimesh = pytest.importorskip("trimesh")
from jaxgjk.robot import (  # noqa: E402
    NonConvexMeshWarning,
    Robot,
    always_in_contact,
    collision_penalty,
    collision_residual,
)
from jaxgjk.robot._robot import _contacts as contacts  # noqa: E402

LIMIT = 'effort="1" velocity="1"'
# A base box; a column (sphere) on a yaw joint; a flange without geometry; a forearm of two spheres on
# a pitch joint; a slider (sphere) on a prismatic joint; a wrist (sphere) on a continuous joint about a
# tilted axis; two fingers, the right one a mimic of the left; two covers fixed to the column,
# overlapping each other everywhere. Spheres and one box: with sphere obstacles, two compiled queries
# (sphere–sphere, sphere–box) serve every pair.
TOY_URDF = f"""<?xml version="1.0"?>
<robot name="toy">
  <link name="base"><collision><origin xyz="0 0 0.05" rpy="0 0 0.3"/>
    <geometry><box size="0.4 0.3 0.1"/></geometry></collision></link>
  <link name="column"><collision><origin xyz="0 0 0.3"/><geometry><sphere radius="0.06"/></geometry>
    </collision></link>
  <link name="flange"/>
  <link name="forearm">
    <collision><origin xyz="0.1 0 0"/><geometry><sphere radius="0.04"/></geometry></collision>
    <collision><origin xyz="0.25 0 0"/><geometry><sphere radius="0.03"/></geometry></collision></link>
  <link name="slider"><collision><origin xyz="0.05 0 0.01"/><geometry><sphere radius="0.03"/></geometry>
    </collision></link>
  <link name="wrist"><collision><geometry><sphere radius="0.035"/></geometry></collision></link>
  <link name="finger_left"><collision><geometry><sphere radius="0.012"/></geometry></collision></link>
  <link name="finger_right"><collision><geometry><sphere radius="0.012"/></geometry></collision></link>
  <link name="cover_a"><collision><origin xyz="0.02 0 0.3"/><geometry><sphere radius="0.05"/></geometry>
    </collision></link>
  <link name="cover_b"><collision><origin xyz="-0.02 0 0.3"/><geometry><sphere radius="0.05"/></geometry>
    </collision></link>
  <joint name="yaw" type="revolute"><parent link="base"/><child link="column"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/><limit lower="-2" upper="2" {LIMIT}/></joint>
  <joint name="flange_joint" type="fixed"><parent link="column"/><child link="flange"/>
    <origin xyz="0 0 0.35" rpy="0.2 0 0"/></joint>
  <joint name="pitch" type="revolute"><parent link="flange"/><child link="forearm"/>
    <origin xyz="0 0 0.05"/><axis xyz="0 1 0"/><limit lower="-1.5" upper="2.5" {LIMIT}/></joint>
  <joint name="slide" type="prismatic"><parent link="forearm"/><child link="slider"/>
    <origin xyz="0.3 0 0"/><axis xyz="1 0 0"/><limit lower="0" upper="0.2" {LIMIT}/></joint>
  <joint name="spin" type="continuous"><parent link="slider"/><child link="wrist"/>
    <origin xyz="0.12 0 0" rpy="0 0.4 0"/><axis xyz="0 0.6 0.8"/></joint>
  <joint name="grip" type="prismatic"><parent link="wrist"/><child link="finger_left"/>
    <origin xyz="0 0.02 0.05"/><axis xyz="0 1 0"/><limit lower="0" upper="0.04" {LIMIT}/></joint>
  <joint name="grip_mirror" type="prismatic"><parent link="wrist"/><child link="finger_right"/>
    <origin xyz="0 -0.02 0.05"/><axis xyz="0 -1 0"/><limit lower="0" upper="0.07" {LIMIT}/>
    <mimic joint="grip" multiplier="1.5" offset="0.005"/></joint>
  <joint name="cover_a_joint" type="fixed"><parent link="column"/><child link="cover_a"/></joint>
  <joint name="cover_b_joint" type="fixed"><parent link="column"/><child link="cover_b"/></joint>
</robot>
"""
LINKS = ("base", "column", "flange", "forearm", "slider", "wrist", "finger_left", "finger_right",
         "cover_a", "cover_b")
JOINTS = ("yaw", "pitch", "slide", "spin", "grip")
ADJACENT = {("base", "column"), ("column", "forearm"), ("column", "cover_a"), ("column", "cover_b"),
            ("forearm", "slider"), ("slider", "wrist"), ("wrist", "finger_left"), ("wrist", "finger_right")}
NUM_CONFIGURATIONS = 6  # every batched kernel below runs on this many configurations


@pytest.fixture(scope="module")
def toy_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("toy") / "toy.urdf"
    path.write_text(TOY_URDF)
    return path


@pytest.fixture(scope="module")
def toy(toy_path):
    return Robot.from_urdf(toy_path, dtype=np.float64)


@pytest.fixture(scope="module")
def configurations(toy):
    return toy.random_q(jax.random.PRNGKey(3), NUM_CONFIGURATIONS)


SPHERES = jg.Sphere(jnp.array([0.05, 0.08, 0.03]))
SPHERE_ROTATIONS = jnp.tile(jnp.array([1.0, 0, 0, 0]), (3, 1))
# One sphere shared by two poses: a second stack, obstacles 3 and 4.
SHARED = jg.Sphere(jnp.asarray(0.1))
SHARED_POSES = jax.vmap(jg.Pose.from_euler_xyz)(jnp.array([[0.3, 0.2, 0.1], [0.0, 0.5, 1.0]]),
                                                 jnp.array([[0.35, -0.1, 0.4], [-0.3, -0.2, 0.6]]))


def _obstacles(sphere_translations):
    return [SPHERES, SHARED], [jg.Pose(sphere_translations, SPHERE_ROTATIONS), SHARED_POSES]


@pytest.fixture(scope="module")
def sphere_translations():
    return jnp.array([[0.3, 0.1, 0.5], [-0.2, 0.2, 0.3], [0.1, -0.3, 0.7]])


def _row(tree, index):
    return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)


def _geometries_of(robot, link):
    """(group index, row) of each collision geometry of a link."""
    return [(g, r) for g, group in enumerate(robot.groups) for r, own in enumerate(group.links)
            if own == link]


def test_links_joints_and_order(toy):
    assert toy.link_names == LINKS
    assert toy.joint_names == JOINTS
    assert toy.name == "toy"
    np.testing.assert_allclose(toy.lower, [-2, -1.5, 0, -np.inf, 0])
    np.testing.assert_allclose(toy.upper, [2, 2.5, 0.2, np.inf, 0.04])
    parents = toy.kinematics.parents
    assert all(parents[i] < i for i in range(1, len(parents))) and parents[0] == -1


def test_geometry_kinds_parameters_and_origins(toy):
    kinds = {group.kind: group for group in toy.groups}
    assert set(kinds) == {"sphere", "box"}
    boxes = kinds["box"]
    assert [toy.link_names[i] for i in boxes.links] == ["base"]
    np.testing.assert_allclose(boxes.shapes.half_extents, [[0.2, 0.15, 0.05]])
    np.testing.assert_allclose(_row(boxes.origins, 0).rotation_matrix(),
                               jg.Pose.from_euler_xyz(jnp.array([0, 0, 0.3])).rotation_matrix(), atol=1e-15)
    spheres = kinds["sphere"]
    forearm = [r for r, link in enumerate(spheres.links) if toy.link_names[link] == "forearm"]
    np.testing.assert_allclose(spheres.shapes.radius[np.array(forearm)], [0.04, 0.03])


def test_adjacent_and_always_touching_pairs_are_skipped(toy):
    names = set(toy.self_pair_names())
    with_geometry = [toy.link_names[i] for i in toy.geometry_links()]
    assert "flange" not in with_geometry
    expected = {(a, b) for i, a in enumerate(with_geometry) for b in with_geometry[i + 1:]}
    expected -= ADJACENT | {("cover_a", "cover_b")}  # the covers overlap at every configuration
    assert names == expected


def test_always_in_contact_equals_the_exact_test_at_every_sample(toy):
    """The boxes that rule pairs out before the exact test change no answer: every candidate pair, by
    `intersect` at every sampled configuration."""
    candidates = [(a, b) for i, a in enumerate(toy.geometry_links()) for b in toy.geometry_links()[i + 1:]]
    samples = 16
    exact = toy.with_self_pairs(candidates)
    in_contact = np.asarray(contacts(exact, toy.random_q(jax.random.PRNGKey(7), samples))).all(axis=0)
    expected = dict(zip(exact.self_pairs, in_contact.tolist(), strict=True))
    got = always_in_contact(toy, candidates, num_samples=samples, seed=7)
    assert got == [expected[pair] for pair in candidates]
    assert any(got) and not all(got)


def test_forward_kinematics_matches_yourdfpy(toy, toy_path, rng):
    reference = yourdfpy.URDF.load(str(toy_path), build_scene_graph=True, load_meshes=False)
    link_poses = jax.jit(jax.vmap(toy.link_poses))
    qs = np.asarray(toy.random_q(jax.random.PRNGKey(0), 20))
    poses = link_poses(jnp.asarray(qs))
    for index, q in enumerate(qs):
        reference.update_cfg({name: value for name, value in zip(JOINTS, q, strict=True)})
        for link, name in enumerate(LINKS):
            expected = reference.get_transform(name, "base")
            got = _row(_row(poses, index), link)
            np.testing.assert_allclose(got.translation, expected[:3, 3], atol=1e-12)
            np.testing.assert_allclose(got.rotation_matrix(), expected[:3, :3], atol=1e-12)


def test_mimic_joint_follows_its_leader(toy):
    q = jnp.array([0.0, 0.0, 0.0, 0.0, 0.03])
    poses = toy.link_poses(q)
    wrist, left, right = (_row(poses, LINKS.index(name)) for name in ("wrist", "finger_left", "finger_right"))
    offset_left = wrist.inverse().compose(left).translation
    offset_right = wrist.inverse().compose(right).translation
    np.testing.assert_allclose(offset_left, [0, 0.02 + 0.03, 0.05], atol=1e-12)
    np.testing.assert_allclose(offset_right, [0, -0.02 - (1.5 * 0.03 + 0.005), 0.05], atol=1e-12)


def test_base_pose_moves_every_link(toy, configurations):
    base = jg.Pose.from_euler_xyz(jnp.array([0.1, -0.2, 0.7]), jnp.array([1.0, 2.0, -0.5]))
    q = configurations[0]
    moved = toy.link_poses(q, base_pose=base)
    expected = base.compose(toy.link_poses(q))
    np.testing.assert_allclose(moved.translation, expected.translation, atol=1e-12)
    np.testing.assert_allclose(toy.with_base_pose(base).link_poses(q).translation, expected.translation,
                               atol=1e-12)


STEP = 1e-6  # central differences


@pytest.fixture(scope="module")
def evaluated(toy, configurations, sphere_translations):
    """distances and their Jacobians w.r.t. q and the sphere obstacles' positions, at every configuration
    and at the central-difference steps around the first one: one compiled program, one call.

    Returns (result, jacobian_q (B, P, J), jacobian_translations (B, P, 3, 3), qs (B, J),
    translations (B, 3, 3)); rows 0..NUM_CONFIGURATIONS-1 are `configurations`, then ±STEP along each
    joint, then ±STEP along each coordinate of the first sphere obstacle.
    """
    def distances(q, translations):
        result = toy.distances(q, *_obstacles(translations))
        return result.result.distance, result

    def one(q, translations):
        jacobians, result = jax.jacfwd(distances, argnums=(0, 1), has_aux=True)(q, translations)
        return result, *jacobians

    num_joints = len(JOINTS)
    qs = [configurations]
    translations = [jnp.broadcast_to(sphere_translations, (NUM_CONFIGURATIONS, 3, 3))]
    for sign in (1, -1):
        qs.append(configurations[0] + sign * STEP * jnp.eye(num_joints))
        translations.append(jnp.broadcast_to(sphere_translations, (num_joints, 3, 3)))
        qs.append(jnp.broadcast_to(configurations[0], (3, num_joints)))
        first_sphere = jnp.zeros((3, 3, 3)).at[jnp.arange(3), 0, jnp.arange(3)].set(1)  # along x, y, z
        translations.append(sphere_translations + sign * STEP * first_sphere)
    qs, translations = jnp.concatenate(qs), jnp.concatenate(translations)
    return (*jax.jit(jax.vmap(one))(qs, translations), qs, translations)


def test_pairs_layout(toy, sphere_translations, evaluated):
    result = evaluated[0]
    pairs = toy.pairs(*_obstacles(sphere_translations))
    np.testing.assert_array_equal(result.pairs[0], pairs)
    self_count = len(toy.self_pairs)
    assert [tuple(p) for p in pairs[:self_count]] == list(toy.self_pairs)
    num_links = len(LINKS)
    expected = [(link, num_links + k) for k in range(5) for link in toy.geometry_links()]
    assert [tuple(p) for p in pairs[self_count:]] == expected


def test_distances_match_the_reference(toy, configurations, sphere_translations, evaluated):
    """Every pair at every configuration against the exact float64 reference, the least over a link's
    geometries; witness points and normals consistent with the distance."""
    result = evaluated[0]
    stacks, poses = _obstacles(sphere_translations)
    obstacle_list = [(_row(stacks[0], k), _row(poses[0], k)) for k in range(3)]
    obstacle_list += [(stacks[1], _row(poses[1], k)) for k in range(2)]
    num_links = len(LINKS)
    for index, q in enumerate(configurations):
        geometry_poses = toy.geometry_poses(q)
        for pair, (a, b) in enumerate(np.asarray(result.pairs[index])):
            sides = []
            for link in (a, b):
                if link < num_links:
                    sides.append([(_row(toy.groups[g].shapes, r), _row(geometry_poses[g], r))
                                  for g, r in _geometries_of(toy, link)])
                else:
                    sides.append([obstacle_list[link - num_links]])
            expected = min(signed_distance_polytopes(sa, pa, sb, pb)["distance"]
                           for sa, pa in sides[0] for sb, pb in sides[1])
            got = _row(_row(result.result, index), pair)
            np.testing.assert_allclose(got.distance, expected, atol=1e-10, err_msg=f"pair {a}, {b}")
            np.testing.assert_allclose(jnp.dot(got.normal, got.point_b - got.point_a), got.distance,
                                       atol=1e-10)


def test_swapped_kind_pairs_keep_the_links_order(toy, configurations, evaluated):
    """base (a box) against the forearm (spheres) runs as sphere–box and is exchanged back: point_a lies
    on the base's box, point_b on the forearm's nearer sphere, and the normal points from base to forearm."""
    result = evaluated[0]
    pairs = [tuple(p) for p in np.asarray(result.pairs[0])]
    for index, q in enumerate(configurations):
        got = _row(_row(result.result, index), pairs.index((LINKS.index("base"), LINKS.index("forearm"))))
        (group, row), = _geometries_of(toy, 0)
        box_pose = _row(toy.geometry_poses(q)[group], row)
        local = np.asarray(box_pose.inverse().apply(got.point_a))
        half = np.asarray(toy.groups[group].shapes.half_extents[row])
        assert np.max(np.abs(local) - half) == pytest.approx(0, abs=1e-10)  # on the box's surface
        spheres = [_row(toy.geometry_poses(q)[g], r).translation for g, r in _geometries_of(toy, 3)]
        radii = [toy.groups[g].shapes.radius[r] for g, r in _geometries_of(toy, 3)]
        gaps = [abs(float(jnp.linalg.norm(got.point_b - c) - r)) for c, r in zip(spheres, radii, strict=True)]
        assert min(gaps) < 1e-10
        if got.distance > 0:
            np.testing.assert_allclose(got.normal, (got.point_b - got.point_a) / got.distance, atol=1e-8)


def test_jacobians_match_central_differences(toy, evaluated):
    result, jacobian_q, jacobian_t, _, _ = evaluated
    distance = result.result.distance
    num_joints, first = len(JOINTS), NUM_CONFIGURATIONS
    plus_q = distance[first:first + num_joints]
    plus_t = distance[first + num_joints:first + num_joints + 3]
    minus_q = distance[first + num_joints + 3:first + 2 * num_joints + 3]
    minus_t = distance[first + 2 * num_joints + 3:]
    np.testing.assert_allclose(jacobian_q[0], ((plus_q - minus_q) / (2 * STEP)).T, atol=1e-6)
    np.testing.assert_allclose(jacobian_t[0][:, 0, :], ((plus_t - minus_t) / (2 * STEP)).T, atol=1e-6)
    assert np.abs(jacobian_q[0]).max() > 0.1 and np.abs(jacobian_t[0][:, 0, :]).max() > 0.5


def test_reverse_mode_gradient_of_the_cost(toy, configurations, sphere_translations, evaluated):
    """`jax.grad` of `collision_cost` (reverse mode, as optimisers take it) w.r.t. q and the obstacle
    positions equals the chain rule through the forward-mode Jacobians."""
    margin = 0.3
    _, jacobian_q, jacobian_t, _, _ = evaluated
    cost = jax.jit(jax.grad(lambda q, t: toy.collision_cost(q, *_obstacles(t), margin=margin),
                            argnums=(0, 1)))
    distance = evaluated[0].result.distance[1]
    slopes = jax.grad(lambda d: jnp.sum(collision_penalty(d, margin)))(distance)
    grad_q, grad_t = cost(configurations[1], sphere_translations)
    np.testing.assert_allclose(grad_q, slopes @ jacobian_q[1], atol=1e-10)
    np.testing.assert_allclose(grad_t, jnp.einsum("p,pkc->kc", slopes, jacobian_t[1]), atol=1e-10)
    assert np.abs(grad_q).max() > 0


def test_obstacle_forms_trace(toy, configurations, sphere_translations):
    """A `jg.pack` batch and a shared shape, in a list, are obstacle stacks like any other (traced only:
    their values go through the same vmapped queries as the spheres above)."""
    packed = jg.pack([jg.Sphere(jnp.asarray(0.05)), jg.Box(jnp.full(3, 0.1))])
    poses = [jg.Pose(sphere_translations[:2], SPHERE_ROTATIONS[:2]), SHARED_POSES]
    shapes = jax.eval_shape(toy.distances, configurations[0], [packed, jg.Box(jnp.full(3, 0.1))], poses)
    assert shapes.result.distance.shape == (len(toy.self_pairs) + 4 * len(toy.geometry_links()),)


def test_half_space_floor(toy, configurations):
    """A `jg.HalfSpace` shared by a pose is a floor: each link's distance is its lowest point's height
    above the plane (the base box's bottom, at z = 0, exactly 0.02 below a floor at z = 0.02), the
    floor's witness points lie on the plane and the normals point down, out of the links."""
    floor = jg.Pose(jnp.array([[0.0, 0.0, 0.02]]), jnp.array([[1.0, 0.0, 0.0, 0.0]]))
    result = toy.without_self_pairs(toy.self_pairs).distances(configurations[0], jg.HalfSpace(), floor).result
    distance, point_a, point_b = (np.asarray(x) for x in (result.distance, result.point_a, result.point_b))
    np.testing.assert_allclose(distance[0], -0.02, atol=1e-12)
    np.testing.assert_allclose(point_b[:, 2], 0.02, atol=1e-12)
    np.testing.assert_allclose(distance, point_a[:, 2] - 0.02, atol=1e-12)
    np.testing.assert_allclose(np.asarray(result.normal), np.tile([0.0, 0.0, -1.0], (len(distance), 1)),
                               atol=1e-12)


def test_collision_penalty_is_c1():
    margin = 0.1
    d = jnp.array([-0.2, -1e-9, 0.0, 1e-9, 0.05, 0.1 - 1e-9, 0.1, 0.3])
    values = collision_penalty(d, margin)
    slopes = jax.vmap(jax.grad(lambda x: collision_penalty(x, margin)))(d)
    np.testing.assert_allclose(values, [0.25, 0.05, 0.05, 0.05, 0.0125, 0, 0, 0], atol=1e-8)
    np.testing.assert_allclose(slopes, [-1, -1, -1, -1, -0.5, 0, 0, 0], atol=1e-7)
    residual = collision_residual(d, margin)
    np.testing.assert_allclose(residual, np.maximum(0.1 - np.asarray(d), 0))


def test_self_pair_editing(toy):
    fewer = toy.without_self_pairs([("forearm", "base"), ("finger_left", "finger_right")])
    assert set(toy.self_pair_names()) - set(fewer.self_pair_names()) == {
        ("base", "forearm"), ("finger_left", "finger_right")}
    chosen = toy.with_self_pairs([("wrist", "base"), (4, 1)])
    assert chosen.self_pairs == ((0, 5), (1, 4))
    with pytest.raises(KeyError, match="no link 'nope'"):
        toy.with_self_pairs([("nope", "base")])
    with pytest.raises(ValueError, match="no collision geometry"):
        toy.with_self_pairs([("flange", "base")])
    with pytest.raises(ValueError, match="one link twice"):
        toy.with_self_pairs([("base", "base")])


def test_bad_arguments_raise(toy, sphere_translations):
    stacks, poses = _obstacles(sphere_translations)
    with pytest.raises(ValueError, match=r"q must have shape \(5,\)"):
        toy.link_poses(jnp.zeros(4))
    with pytest.raises(ValueError, match="holds \\[3\\] shapes but obstacle_poses\\[0\\] 2 poses"):
        toy.distances(jnp.zeros(5), stacks[0], poses[1])
    with pytest.raises(ValueError, match="obstacle_poses given without obstacles"):
        toy.distances(jnp.zeros(5), None, poses[0])
    with pytest.raises(ValueError, match="no pairs to check"):
        toy.with_self_pairs([]).distances(jnp.zeros(5))


# --- loading: meshes, cylinders, errors --------------------------------------------------------------

def _write_mesh(path, vertices, faces):
    trimesh.Trimesh(vertices=vertices, faces=faces, process=False).export(path)


def _write_l_shape(path):
    """An L-shaped prism (non-convex; its side walls only, as an OBJ): 12 vertices, the reflex corner's
    two inside the hull."""
    outline = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float) * 0.05
    vertices = np.concatenate([np.c_[outline, np.zeros(6)], np.c_[outline, np.full(6, 0.02)]])
    walls = [(i, (i + 1) % 6, 6 + (i + 1) % 6, 6 + i) for i in range(6)]
    lines = [f"v {x} {y} {z}" for x, y, z in vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}\nf {a + 1} {c + 1} {d + 1}" for a, b, c, d in walls]
    path.write_text("\n".join(lines) + "\n")


def test_meshes_cylinders_and_the_non_convex_warning(tmp_path):
    meshes = tmp_path / "meshes"
    meshes.mkdir()
    tetrahedron = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    _write_mesh(meshes / "tetra.stl", tetrahedron, [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    _write_l_shape(meshes / "ell.obj")
    urdf = tmp_path / "parts.urdf"
    urdf.write_text(f"""<robot name="parts">
      <link name="a"><collision><geometry><mesh filename="package://meshes/tetra.stl" scale="0.1 0.2 0.3"/>
        </geometry></collision></link>
      <link name="b"><collision><origin xyz="0 0 0.5"/><geometry><cylinder radius="0.05" length="0.4"/>
        </geometry></collision>
        <collision><geometry><mesh filename="meshes/ell.obj"/></geometry></collision></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" {LIMIT}/></joint></robot>""")
    message = r"ell\.obj \(4 of 12 faces inside the hull, up to 0\.00667 deep"
    with pytest.warns(NonConvexMeshWarning, match=message) as caught:
        robot = Robot.from_urdf(urdf, dtype=np.float64, self_pairs=[])
    assert len(caught) == 1 and "tetra" not in str(caught[0].message)
    kinds = {group.kind: group for group in robot.groups}
    assert set(kinds) == {"cylinder", "polytope"}
    np.testing.assert_allclose(kinds["cylinder"].shapes.radius, [0.05])
    np.testing.assert_allclose(kinds["cylinder"].shapes.half_length, [0.2])
    polytopes = kinds["polytope"].shapes
    tetra = np.asarray(polytopes.vertices[0])[np.asarray(polytopes.mask[0])]
    np.testing.assert_allclose(sorted(map(tuple, tetra)), sorted(map(tuple, tetrahedron * [0.1, 0.2, 0.3])))
    ell = np.asarray(polytopes.vertices[1])[np.asarray(polytopes.mask[1])]
    assert len(ell) == 10  # the L's reflex corner is inside the hull at both ends


def test_climbing_polytopes_above_the_threshold(tmp_path):
    """Hulls above `climbing_above` vertices stack as one `ClimbingPolytope` (padded with interior
    points no walk reaches): the same support values as the dense hulls in every direction."""
    for subdivisions in (1, 2):  # 42 and 162 vertices, convex
        trimesh.creation.icosphere(subdivisions=subdivisions, radius=0.1 * subdivisions).export(
            tmp_path / f"ball{subdivisions}.stl")
    urdf = tmp_path / "balls.urdf"
    urdf.write_text(f"""<robot name="balls">
      <link name="a"><collision><geometry><mesh filename="ball1.stl"/></geometry></collision></link>
      <link name="b"><collision><geometry><mesh filename="ball2.stl"/></geometry></collision></link>
      <joint name="j" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
        <limit lower="0" upper="1" {LIMIT}/></joint></robot>""")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        climbing = Robot.from_urdf(urdf, dtype=np.float64, climbing_above=30, self_pairs=[])
        dense = Robot.from_urdf(urdf, dtype=np.float64, self_pairs=[])
    assert climbing.groups[0].kind == "climbing" and dense.groups[0].kind == "polytope"
    assert climbing.groups[0].shapes.vertices.shape == (2, 162, 3)
    directions = jnp.asarray(np.random.default_rng(0).normal(size=(500, 3)))

    def support_values(shapes):
        points = jax.vmap(lambda shape: jax.vmap(shape.support)(directions))(shapes)
        return jnp.einsum("gnc,nc->gn", points, directions)

    np.testing.assert_allclose(support_values(climbing.groups[0].shapes),
                               support_values(dense.groups[0].shapes), atol=1e-15)


@pytest.mark.parametrize(("body", "error", "message"), [
    ('<link name="a"><collision><geometry><mesh filename="missing.obj"/></geometry></collision></link>',
     FileNotFoundError, r"collision mesh 'missing\.obj' of .*bad\.urdf not found"),
    ('<link name="a"/><link name="b"/><joint name="free" type="floating"><parent link="a"/>'
     '<child link="b"/></joint>', ValueError, r"joint 'free': joint type 'floating' is not supported"),
    ('<link name="a"/><link name="b"/>', ValueError, "exactly one root link"),
    ('<link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
     '<axis xyz="0 0 0"/><limit lower="0" upper="1" effort="1" velocity="1"/></joint>', ValueError,
     "has no direction"),
])
def test_bad_urdfs_raise_naming_the_problem(tmp_path, body, error, message):
    urdf = tmp_path / "bad.urdf"
    urdf.write_text(f'<robot name="bad">{body}</robot>')
    with pytest.raises(error, match=message):
        Robot.from_urdf(urdf, self_pairs=[])


def test_missing_urdf_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.urdf"):
        Robot.from_urdf(tmp_path / "nowhere.urdf")
